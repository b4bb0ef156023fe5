package io.moemesh.kvstore;

import com.google.protobuf.Timestamp;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.moemesh.proto.common.v1.DType;
import io.moemesh.proto.common.v1.Tensor;
import io.moemesh.proto.kvstore.v1.KvLayout;
import io.moemesh.proto.tensor.WireTensors;
import java.time.Duration;
import java.time.Instant;
import org.jboss.logging.Logger;

/** Conversions between the wire contract and the store's types; every bad field becomes INVALID_ARGUMENT. */
final class ProtoMapping {
  private static final Logger LOG = Logger.getLogger(ProtoMapping.class);

  private ProtoMapping() {}

  static io.moemesh.kvstore.KvLayout layout(String key, boolean present, KvLayout proto) {
    if (!present) throw KvStoreException.invalid("put of '%s': layout is required", key);
    return new io.moemesh.kvstore.KvLayout(proto.getNumLayers(), proto.getNumTokens(), proto.getLatentDim(),
        dtype("layout.dtype", proto.getDtype()), proto.getPageSize());
  }

  static KvLayout layout(io.moemesh.kvstore.KvLayout layout) {
    return KvLayout.newBuilder().setNumLayers(layout.numLayers()).setNumTokens(layout.numTokens())
        .setLatentDim(layout.latentDim()).setDtype(dtype(layout.dtype())).setPageSize(layout.pageSize()).build();
  }

  static KvDType dtype(String field, DType proto) {
    return switch (proto) {
      case DTYPE_BF16 -> KvDType.BF16;
      case DTYPE_F32 -> KvDType.F32;
      default -> throw KvStoreException.invalid("%s must be DTYPE_BF16 or DTYPE_F32, got %s", field, proto);
    };
  }

  static DType dtype(KvDType dtype) {
    return switch (dtype) {
      case BF16 -> DType.DTYPE_BF16;
      case F32 -> DType.DTYPE_F32;
    };
  }

  /**
   * A layer's rows as the codec checks every wire tensor (rank 2, each dimension an int, exactly the bytes the
   * shape needs); the store then checks them against the object's layout.
   */
  static WireTensors.Checked rows(String what, Tensor tensor) {
    try {
      return WireTensors.read(tensor, what, 2, DType.DTYPE_BF16, DType.DTYPE_F32);
    } catch (IllegalArgumentException e) {
      throw KvStoreException.invalid("%s", e.getMessage());
    }
  }

  /** Null for an unset or zero duration (meaning "the default"). */
  static Duration duration(boolean present, com.google.protobuf.Duration proto) {
    return present ? Duration.ofSeconds(proto.getSeconds(), proto.getNanos()) : null;
  }

  static com.google.protobuf.Duration duration(Duration d) {
    return com.google.protobuf.Duration.newBuilder().setSeconds(d.getSeconds()).setNanos(d.getNano()).build();
  }

  static Timestamp timestamp(Instant t) {
    return Timestamp.newBuilder().setSeconds(t.getEpochSecond()).setNanos(t.getNano()).build();
  }

  /** The status for a failure: a store error keeps its reason and message; anything else is INTERNAL. */
  static StatusRuntimeException status(Throwable failure) {
    if (failure instanceof KvStoreException e) {
      return Status.fromCode(Status.Code.valueOf(e.reason().name())).withDescription(e.getMessage()).asRuntimeException();
    }
    if (failure instanceof StatusRuntimeException e) return e;
    LOG.error("kv-store call failed unexpectedly", failure);
    return Status.INTERNAL.withDescription("kv-store internal error: " + failure).withCause(failure).asRuntimeException();
  }
}
