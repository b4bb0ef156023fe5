package io.moemesh.model.checkpoint;

/**
 * A checkpoint that cannot be read as asked: a missing, malformed or truncated file, a tensor that does not
 * exist, or one whose dtype or shape does not fit where it is loaded. The message always names the file (or
 * directory) and the tensor or field at fault.
 */
public final class CheckpointException extends RuntimeException {
  public CheckpointException(String message) {
    super(message);
  }

  public CheckpointException(String message, Throwable cause) {
    super(message, cause);
  }
}
