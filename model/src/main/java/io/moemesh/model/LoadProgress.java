package io.moemesh.model;

/** Told as a checkpoint loads: bytes of tensor data read so far, of the checkpoint's total. */
@FunctionalInterface
public interface LoadProgress {
  void loaded(long bytesDone, long bytesTotal);
}
