package io.moemesh.engine.experts;

import io.moemesh.kernels.DType;
import java.nio.ByteBuffer;

/**
 * What comes back from an expert service: {@code rows × cols} expert outputs (BF16 or F32, little-endian,
 * row-major) — one row per assignment of a routed dispatch, or per token of a shared call.
 */
public record ExpertOutputs(DType dtype, int rows, int cols, ByteBuffer data) {
  public ExpertOutputs {
    if (dtype != DType.BF16 && dtype != DType.F32) throw new IllegalArgumentException("expert outputs are BF16 or F32, got " + dtype);
    if ((long) rows * cols * dtype.byteSize() != data.remaining())
      throw new IllegalArgumentException(data.remaining() + " bytes for " + rows + " × " + cols + " " + dtype + " expert outputs");
  }
}
