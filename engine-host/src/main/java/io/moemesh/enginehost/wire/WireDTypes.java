package io.moemesh.enginehost.wire;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Tensor;
import io.moemesh.proto.tensor.WireTensors;

/**
 * The engine's element types as the wire names them ({@code moemesh.common.v1.DType}), for the engine services'
 * tensors: hidden states and expert outputs to and from the expert services, KV rows to and from kv-store. The
 * tensors themselves go through the mesh's one codec, {@link WireTensors}.
 */
public final class WireDTypes {
  private WireDTypes() {}

  /** A contiguous engine tensor (hidden states, scales) as a wire tensor, through the codec. */
  public static io.moemesh.proto.common.v1.Tensor write(Tensor t) {
    return WireTensors.write(wire(t.dtype()), t.asReadOnlyBytes(), t.shape());
  }

  /** {@code dtype} on the wire; an IllegalArgumentException for FP8, which never travels (weights only). */
  public static io.moemesh.proto.common.v1.DType wire(DType dtype) {
    return switch (dtype) {
      case F32 -> io.moemesh.proto.common.v1.DType.DTYPE_F32;
      case BF16 -> io.moemesh.proto.common.v1.DType.DTYPE_BF16;
      case I8 -> io.moemesh.proto.common.v1.DType.DTYPE_I8;
      case I32 -> io.moemesh.proto.common.v1.DType.DTYPE_I32;
      case F8_E4M3 -> throw new IllegalArgumentException(dtype + " does not travel on the wire");
    };
  }

  /** The engine's dtype for a wire dtype; an IllegalArgumentException naming {@code what} for an unset or unknown one. */
  public static DType kernels(io.moemesh.proto.common.v1.DType wire, String what) {
    return switch (wire) {
      case DTYPE_F32 -> DType.F32;
      case DTYPE_BF16 -> DType.BF16;
      case DTYPE_I8 -> DType.I8;
      case DTYPE_I32 -> DType.I32;
      case DTYPE_UNSPECIFIED, UNRECOGNIZED -> throw new IllegalArgumentException(what + " has no dtype");
    };
  }
}
