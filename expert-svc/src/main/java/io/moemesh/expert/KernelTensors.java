package io.moemesh.expert;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.proto.tensor.WireTensors;

/** Wire tensors into this service's arena and back, through the mesh's one codec ({@link WireTensors}), which checks them. */
final class KernelTensors {
  private KernelTensors() {}

  /** {@code wire} (any dtype that travels) as a tensor of rank {@code rank} in {@code arena}; bad input is an IllegalArgumentException naming {@code what}. */
  static Tensor read(io.moemesh.proto.common.v1.Tensor wire, String what, int rank, TensorArena arena) {
    return copy(WireTensors.read(wire, what, rank), arena);
  }

  /** {@code wire} as a tensor of {@code dtype} and rank {@code rank} in {@code arena}. */
  static Tensor read(io.moemesh.proto.common.v1.Tensor wire, String what, DType dtype, int rank, TensorArena arena) {
    return copy(WireTensors.read(wire, what, rank, wire(dtype)), arena);
  }

  static io.moemesh.proto.common.v1.Tensor write(Tensor t) {
    return WireTensors.write(wire(t.dtype()), t.asReadOnlyBytes(), t.shape());
  }

  private static Tensor copy(WireTensors.Checked checked, TensorArena arena) {
    Tensor t = arena.allocate(kernels(checked.dtype()), checked.shape());
    if (checked.data().hasRemaining()) t.copyFromBytes(checked.data());
    return t;
  }

  private static DType kernels(io.moemesh.proto.common.v1.DType wire) {
    return switch (wire) {
      case DTYPE_F32 -> DType.F32;
      case DTYPE_BF16 -> DType.BF16;
      case DTYPE_I8 -> DType.I8;
      case DTYPE_I32 -> DType.I32;
      case DTYPE_UNSPECIFIED, UNRECOGNIZED -> throw new IllegalArgumentException("no dtype"); // WireTensors.read refused it already
    };
  }

  private static io.moemesh.proto.common.v1.DType wire(DType d) {
    return switch (d) {
      case F32 -> io.moemesh.proto.common.v1.DType.DTYPE_F32;
      case BF16 -> io.moemesh.proto.common.v1.DType.DTYPE_BF16;
      case I8 -> io.moemesh.proto.common.v1.DType.DTYPE_I8;
      case I32 -> io.moemesh.proto.common.v1.DType.DTYPE_I32;
      case F8_E4M3 -> throw new IllegalArgumentException(d + " does not travel on the wire");
    };
  }
}
