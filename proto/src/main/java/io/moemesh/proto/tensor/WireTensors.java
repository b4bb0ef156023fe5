package io.moemesh.proto.tensor;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.moemesh.proto.common.v1.DType;
import io.moemesh.proto.common.v1.Tensor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;

/**
 * The one codec of {@code moemesh.common.v1.Tensor} (tensor.proto): every service builds its wire tensors here and
 * reads them back through {@link #read}. A received tensor is untrusted input, so reading checks its dtype, rank,
 * every dimension and the byte count, and a bad one is an IllegalArgumentException naming the field ({@code what})
 * and what is wrong. Elements stay as they are on the wire, little-endian and row-major: the codec never reorders a
 * byte, it only checks how many there are. Building checks the same, so no service sends a tensor it would refuse.
 */
public final class WireTensors {
  private WireTensors() {}

  /** A wire tensor that passed the checks: exactly {@code product(shape) × byteSize(dtype)} bytes of data, read-only, little-endian. */
  public record Checked(DType dtype, int[] shape, ByteBuffer data) {
    public int dim(int i) {
      return shape[i];
    }

    /** The shape as the store's and the messages' {@code long[]}. */
    public long[] longShape() {
      return Arrays.stream(shape).asLongStream().toArray();
    }
  }

  /** Bytes per element of {@code dtype}; an IllegalArgumentException naming {@code what} for an unset or unknown dtype. */
  public static int byteSize(DType dtype, String what) {
    return switch (dtype) {
      case DTYPE_F32, DTYPE_I32 -> 4;
      case DTYPE_BF16 -> 2;
      case DTYPE_I8 -> 1;
      case DTYPE_UNSPECIFIED, UNRECOGNIZED -> throw new IllegalArgumentException(what + " has no dtype");
    };
  }

  /**
   * {@code wire} checked: a dtype among {@code allowed} (any set dtype when none is given), rank {@code rank}, every
   * dimension in {@code [0, 2³¹)}, and data of exactly the size the shape and dtype need.
   */
  public static Checked read(Tensor wire, String what, int rank, DType... allowed) {
    DType dtype = wire.getDtype();
    if (allowed.length > 0 && !List.of(allowed).contains(dtype))
      throw new IllegalArgumentException(what + " must be " + names(allowed) + ", got " + dtype);
    long bytes = byteSize(dtype, what);
    if (wire.getShapeCount() != rank) throw new IllegalArgumentException(what + " must have rank " + rank + ", got shape " + wire.getShapeList());
    int[] shape = new int[rank];
    for (int i = 0; i < rank; i++) {
      long d = wire.getShape(i);
      if (d < 0 || d > Integer.MAX_VALUE) throw new IllegalArgumentException(what + " has a bad dimension " + d + " in shape " + wire.getShapeList());
      shape[i] = (int) d;
      bytes = times(bytes, d, what, wire.getShapeList());
    }
    if (bytes != wire.getData().size())
      throw new IllegalArgumentException(what + " " + wire.getShapeList() + " " + dtype + " needs " + bytes + " bytes, got " + wire.getData().size());
    return new Checked(dtype, shape, wire.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN));
  }

  /** A rank-1 {@code DTYPE_I32} tensor's values (token and expert ids), checked as {@link #read} does. */
  public static int[] readInts(Tensor wire, String what) {
    Checked t = read(wire, what, 1, DType.DTYPE_I32);
    int[] out = new int[t.dim(0)];
    t.data().asIntBuffer().get(out);
    return out;
  }

  /** A tensor of the bytes {@code data} holds from its position to its limit (copied; {@code data} is left as it was). */
  public static Tensor write(DType dtype, ByteBuffer data, int... shape) {
    return build(dtype, ByteString.copyFrom(data.duplicate()), shape);
  }

  /**
   * A tensor over {@code data} itself, without a copy: the caller hands the array over and never writes it again
   * (a frame built from a fresh array, sent once).
   */
  public static Tensor wrap(DType dtype, byte[] data, int... shape) {
    return build(dtype, UnsafeByteOperations.unsafeWrap(data), shape);
  }

  /** A rank-1 {@code DTYPE_I32} tensor of {@code values}. */
  public static Tensor ints(int... values) {
    ByteBuffer bytes = ByteBuffer.allocate(values.length * Integer.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    bytes.asIntBuffer().put(values);
    return build(DType.DTYPE_I32, UnsafeByteOperations.unsafeWrap(bytes.array()), values.length);
  }

  private static Tensor build(DType dtype, ByteString data, int... shape) {
    String what = "a tensor to send";
    long bytes = byteSize(dtype, what);
    Tensor.Builder b = Tensor.newBuilder().setDtype(dtype);
    for (int d : shape) {
      if (d < 0) throw new IllegalArgumentException(what + " has a bad dimension " + d + " in shape " + Arrays.toString(shape));
      b.addShape(d);
      bytes = times(bytes, d, what, b.getShapeList());
    }
    if (bytes != data.size())
      throw new IllegalArgumentException(what + " " + Arrays.toString(shape) + " " + dtype + " needs " + bytes + " bytes, got " + data.size());
    return b.setData(data).build();
  }

  /** {@code bytes × d}, or an IllegalArgumentException when the shape's size passes what a long counts (no message is that big). */
  private static long times(long bytes, long d, String what, List<Long> shape) {
    try {
      return Math.multiplyExact(bytes, d);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(what + " has a shape " + shape + " of more than 2⁶³ bytes");
    }
  }

  private static String names(DType[] allowed) {
    if (allowed.length == 1) return allowed[0].name();
    return String.join(", ", Arrays.stream(allowed, 0, allowed.length - 1).map(DType::name).toList()) + " or " + allowed[allowed.length - 1].name();
  }
}
