package io.moemesh.kernels;

/** A kernel refused its input (shape, dtype, alignment, a closed arena) or failed; names the op and why. */
public final class KernelException extends RuntimeException {
  public KernelException(String op, String message) {
    super(op + ": " + message);
  }
}
