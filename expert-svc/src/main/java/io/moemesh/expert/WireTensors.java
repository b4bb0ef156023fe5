package io.moemesh.expert;

import com.google.protobuf.ByteString;
import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.proto.common.v1.Tensor.Builder;

/** Wire tensors ({@code moemesh.common.v1.Tensor}) to off-heap tensors and back, validated. */
final class WireTensors {
  private WireTensors() {}

  /** {@code wire} as a tensor of {@code dtype} and rank {@code rank} in {@code arena}; bad input is an IllegalArgumentException naming {@code what}. */
  static Tensor read(io.moemesh.proto.common.v1.Tensor wire, String what, DType dtype, int rank, TensorArena arena) {
    DType got = dtype(wire.getDtype(), what);
    if (got != dtype) throw new IllegalArgumentException(what + " must be " + dtype + ", got " + got);
    return read(wire, what, rank, arena);
  }

  static Tensor read(io.moemesh.proto.common.v1.Tensor wire, String what, int rank, TensorArena arena) {
    DType dtype = dtype(wire.getDtype(), what);
    if (wire.getShapeCount() != rank) throw new IllegalArgumentException(what + " must have rank " + rank + ", got shape " + wire.getShapeList());
    int[] shape = new int[rank];
    long elements = 1;
    for (int i = 0; i < rank; i++) {
      long d = wire.getShape(i);
      if (d < 0 || d > Integer.MAX_VALUE) throw new IllegalArgumentException(what + " has a bad dimension " + d);
      shape[i] = (int) d;
      elements *= d;
    }
    if (elements * dtype.byteSize() != wire.getData().size())
      throw new IllegalArgumentException(what + " " + wire.getShapeList() + " " + dtype + " needs " + elements * dtype.byteSize()
          + " bytes, got " + wire.getData().size());
    Tensor t = arena.allocate(dtype, shape);
    if (elements > 0) t.copyFromBytes(wire.getData().asReadOnlyByteBuffer());
    return t;
  }

  static int[] ints(io.moemesh.proto.common.v1.Tensor wire, String what, TensorArena arena) {
    Tensor t = read(wire, what, DType.I32, 1, arena);
    int[] out = new int[t.dim(0)];
    for (int i = 0; i < out.length; i++) out[i] = t.getInt(i);
    return out;
  }

  static io.moemesh.proto.common.v1.Tensor write(Tensor t) {
    Builder b = io.moemesh.proto.common.v1.Tensor.newBuilder().setDtype(wire(t.dtype()));
    for (int i = 0; i < t.rank(); i++) b.addShape(t.dim(i));
    return b.setData(ByteString.copyFrom(t.asReadOnlyBytes())).build();
  }

  private static DType dtype(io.moemesh.proto.common.v1.DType wire, String what) {
    return switch (wire) {
      case DTYPE_F32 -> DType.F32;
      case DTYPE_BF16 -> DType.BF16;
      case DTYPE_I8 -> DType.I8;
      case DTYPE_I32 -> DType.I32;
      case DTYPE_UNSPECIFIED, UNRECOGNIZED -> throw new IllegalArgumentException(what + " has no dtype");
    };
  }

  private static io.moemesh.proto.common.v1.DType wire(DType d) {
    return switch (d) {
      case F32 -> io.moemesh.proto.common.v1.DType.DTYPE_F32;
      case BF16 -> io.moemesh.proto.common.v1.DType.DTYPE_BF16;
      case I8 -> io.moemesh.proto.common.v1.DType.DTYPE_I8;
      case I32 -> io.moemesh.proto.common.v1.DType.DTYPE_I32;
      default -> throw new IllegalArgumentException(d + " does not travel on the wire");
    };
  }
}
