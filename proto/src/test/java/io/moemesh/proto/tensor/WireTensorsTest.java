package io.moemesh.proto.tensor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.moemesh.proto.common.v1.DType;
import io.moemesh.proto.common.v1.Tensor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class WireTensorsTest {
  static ByteBuffer floats(float... values) {
    ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(values);
    return b;
  }

  static Tensor raw(DType dtype, byte[] data, long... shape) {
    Tensor.Builder b = Tensor.newBuilder().setDtype(dtype).setData(ByteString.copyFrom(data));
    for (long d : shape) b.addShape(d);
    return b.build();
  }

  @Nested
  class RoundTrips {
    @Test
    void floatsComeBackAsTheyWent() {
      ByteBuffer sent = floats(1f, -2.5f, 3e-7f, Float.MAX_VALUE, 0f, -0f);
      WireTensors.Checked got = WireTensors.read(WireTensors.write(DType.DTYPE_F32, sent, 2, 3), "hidden", 2);
      assertThat(got.dtype()).isEqualTo(DType.DTYPE_F32);
      assertThat(got.shape()).containsExactly(2, 3);
      assertThat(got.longShape()).containsExactly(2L, 3L);
      float[] values = new float[6];
      got.data().asFloatBuffer().get(values);
      assertThat(values).containsExactly(1f, -2.5f, 3e-7f, Float.MAX_VALUE, 0f, -0f);
      assertThat(sent.position()).as("the caller's buffer is left as it was").isZero();
    }

    @Test
    void bf16AndInt8BytesComeBackUnchanged() {
      byte[] bf16 = {0x3f, (byte) 0x80, (byte) 0xc0, 0x40}; // 1.0, -3.0 in BF16 little-endian pairs, any bytes do
      byte[] i8 = {-128, -1, 0, 1, 127, 5};
      assertThat(bytes(WireTensors.read(WireTensors.write(DType.DTYPE_BF16, ByteBuffer.wrap(bf16), 1, 2), "rows", 2, DType.DTYPE_BF16)))
          .containsExactly(bf16);
      assertThat(bytes(WireTensors.read(WireTensors.wrap(DType.DTYPE_I8, i8.clone(), 3, 2), "hidden", 2, DType.DTYPE_I8))).containsExactly(i8);
    }

    @Test
    void intsComeBackIncludingNoneAndNegatives() {
      assertThat(WireTensors.readInts(WireTensors.ints(7, -1, Integer.MAX_VALUE, Integer.MIN_VALUE, 0), "token_index"))
          .containsExactly(7, -1, Integer.MAX_VALUE, Integer.MIN_VALUE, 0);
      assertThat(WireTensors.readInts(WireTensors.ints(), "experts")).isEmpty();
    }

    @Test
    void theWireBytesAreLittleEndianRowMajorAsTensorProtoSays() {
      assertThat(WireTensors.ints(1, 256).getData().toByteArray()).containsExactly(1, 0, 0, 0, 0, 1, 0, 0);
      assertThat(WireTensors.write(DType.DTYPE_F32, floats(1f), 1, 1))
          .isEqualTo(raw(DType.DTYPE_F32, new byte[] {0, 0, (byte) 0x80, 0x3f}, 1, 1));
      assertThat(WireTensors.write(DType.DTYPE_F32, floats(1f), 1, 1).toByteArray())
          .as("the same message bytes as a tensor built by hand").isEqualTo(raw(DType.DTYPE_F32, new byte[] {0, 0, (byte) 0x80, 0x3f}, 1, 1).toByteArray());
    }

    @Test
    void aSliceOfAnArrayTravelsAsItself() {
      byte[] rows = {9, 9, 1, 2, 3, 4, 9};
      Tensor t = WireTensors.write(DType.DTYPE_BF16, ByteBuffer.wrap(rows, 2, 4), 1, 2);
      assertThat(t.getData().toByteArray()).containsExactly(1, 2, 3, 4);
    }

    @Test
    void emptyTensorsAreValid() {
      assertThat(WireTensors.read(WireTensors.write(DType.DTYPE_F32, ByteBuffer.allocate(0), 0, 7), "outputs", 2).shape()).containsExactly(0, 7);
    }
  }

  @Nested
  class BadInputIsNamed {
    @Test
    void anUnsetOrUnknownDtype() {
      assertThatThrownBy(() -> WireTensors.read(raw(DType.DTYPE_UNSPECIFIED, new byte[0], 0), "hidden", 1))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("hidden has no dtype");
      Tensor unknown = Tensor.newBuilder().setDtypeValue(42).addShape(0).build();
      assertThatThrownBy(() -> WireTensors.read(unknown, "hidden", 1)).hasMessage("hidden has no dtype");
    }

    @Test
    void aDtypeNotAllowedHere() {
      assertThatThrownBy(() -> WireTensors.read(raw(DType.DTYPE_I8, new byte[2], 1, 2), "rows.dtype", 2, DType.DTYPE_BF16, DType.DTYPE_F32))
          .hasMessage("rows.dtype must be DTYPE_BF16 or DTYPE_F32, got DTYPE_I8");
      assertThatThrownBy(() -> WireTensors.readInts(raw(DType.DTYPE_F32, new byte[4], 1), "experts"))
          .hasMessage("experts must be DTYPE_I32, got DTYPE_F32");
      assertThatThrownBy(() -> WireTensors.read(raw(DType.DTYPE_UNSPECIFIED, new byte[0], 0), "scales", 1, DType.DTYPE_F32))
          .hasMessage("scales must be DTYPE_F32, got DTYPE_UNSPECIFIED");
    }

    @Test
    void aWrongRank() {
      assertThatThrownBy(() -> WireTensors.read(raw(DType.DTYPE_F32, new byte[12], 3), "hidden", 2)).hasMessage("hidden must have rank 2, got shape [3]");
    }

    @Test
    void aNegativeOrHugeDimension() {
      assertThatThrownBy(() -> WireTensors.read(raw(DType.DTYPE_F32, new byte[0], -1, 0), "hidden", 2))
          .hasMessage("hidden has a bad dimension -1 in shape [-1, 0]");
      assertThatThrownBy(() -> WireTensors.read(raw(DType.DTYPE_I8, new byte[0], 1L << 31), "hidden", 1))
          .hasMessage("hidden has a bad dimension 2147483648 in shape [2147483648]");
    }

    @Test
    void aShapeWhoseSizeOverflows() {
      int big = Integer.MAX_VALUE;
      assertThatThrownBy(() -> WireTensors.read(raw(DType.DTYPE_F32, new byte[4], big, big, big), "hidden", 3))
          .hasMessage("hidden has a shape [2147483647, 2147483647, 2147483647] of more than 2⁶³ bytes");
    }

    @Test
    void tooFewOrTooManyBytes() {
      assertThatThrownBy(() -> WireTensors.read(raw(DType.DTYPE_F32, new byte[20], 2, 3), "hidden", 2))
          .hasMessage("hidden [2, 3] DTYPE_F32 needs 24 bytes, got 20");
      assertThatThrownBy(() -> WireTensors.read(raw(DType.DTYPE_BF16, new byte[14], 2, 3), "outputs", 2))
          .hasMessage("outputs [2, 3] DTYPE_BF16 needs 12 bytes, got 14");
      assertThatThrownBy(() -> WireTensors.readInts(raw(DType.DTYPE_I32, new byte[7], 2), "token_index"))
          .hasMessage("token_index [2] DTYPE_I32 needs 8 bytes, got 7");
    }

    @Test
    void noServiceSendsATensorItWouldRefuse() {
      assertThatThrownBy(() -> WireTensors.write(DType.DTYPE_F32, floats(1f, 2f), 1, 3))
          .hasMessage("a tensor to send [1, 3] DTYPE_F32 needs 12 bytes, got 8");
      assertThatThrownBy(() -> WireTensors.wrap(DType.DTYPE_UNSPECIFIED, new byte[0])).hasMessage("a tensor to send has no dtype");
      assertThatThrownBy(() -> WireTensors.wrap(DType.DTYPE_I8, new byte[0], -1)).hasMessage("a tensor to send has a bad dimension -1 in shape [-1]");
    }
  }

  static byte[] bytes(WireTensors.Checked t) {
    byte[] out = new byte[t.data().remaining()];
    t.data().duplicate().get(out);
    return out;
  }
}
