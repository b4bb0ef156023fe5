package io.moemesh.kernels;

/** Run in a child JVM by {@link NativeKernelsTest}: prints the name of the kernels the native setting gives. */
final class FallbackProbe {
  public static void main(String[] args) {
    try (Kernels kernels = KernelBackend.NATIVE.open(1)) {
      System.out.println(kernels.name());
    }
  }
}
