package io.moemesh.engine.experts;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import java.nio.ByteBuffer;

/** Where an expert service's answer goes: its rows into their places of a layer's output, checked against its shape. */
final class ExpertOutputsCopy {
  private ExpertOutputsCopy() {}

  /** Copies a shard's rows into their places {@code globalIndex} of {@code y}, a run of consecutive places at a time. */
  static void place(Kernels k, Tensor y, ExpertOutputs outputs, int[] globalIndex, TensorArena scratch) {
    int dim = y.dim(1);
    if (outputs.rows() != globalIndex.length || outputs.cols() != dim)
      throw new IllegalStateException("a shard answered " + outputs.rows() + " × " + outputs.cols() + " outputs for "
          + globalIndex.length + " × " + dim);
    Tensor got = asTensor(outputs, scratch);
    for (int j = 0; j < globalIndex.length; ) {
      int run = 1;
      while (j + run < globalIndex.length && globalIndex[j + run] == globalIndex[j] + run) run++;
      copy(k, y.rows(globalIndex[j], globalIndex[j] + run), got.rows(j, j + run));
      j += run;
    }
  }

  static void readInto(Kernels k, Tensor out, ExpertOutputs outputs, TensorArena scratch) {
    if (outputs.rows() != out.numRows() || outputs.cols() != out.dim(1))
      throw new IllegalStateException("the shared experts answered " + outputs.rows() + " × " + outputs.cols() + " for " + out);
    copy(k, out, asTensor(outputs, scratch));
  }

  private static Tensor asTensor(ExpertOutputs outputs, TensorArena scratch) {
    Tensor t = scratch.allocate(outputs.dtype(), outputs.rows(), outputs.cols());
    ByteBuffer data = outputs.data();
    if (data.remaining() > 0) t.copyFromBytes(data);
    return t;
  }

  private static void copy(Kernels k, Tensor to, Tensor from) {
    if (from.dtype() == DType.F32) to.copyFrom(from);
    else k.convert(to, from);
  }
}
