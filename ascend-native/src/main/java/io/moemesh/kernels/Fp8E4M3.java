package io.moemesh.kernels;

/**
 * FP8 e4m3fn (OCP "E4M3", the format of DeepSeek-V3's weights): sign, 4 exponent bits with bias 7, 3 mantissa
 * bits; exponent 0 is subnormal; {@code S.1111.111} is NaN; there are no infinities; the largest value is 448.
 */
public final class Fp8E4M3 {
  private Fp8E4M3() {}

  public static float toFloat(byte bits) {
    int b = bits & 0xFF;
    float sign = (b & 0x80) != 0 ? -1f : 1f;
    int exponent = (b >>> 3) & 0xF;
    int mantissa = b & 0x7;
    if (exponent == 0xF && mantissa == 0x7) return Float.NaN;
    if (exponent == 0) return sign * Math.scalb(mantissa / 8f, -6);
    return sign * Math.scalb(1f + mantissa / 8f, exponent - 7);
  }

  /** The nearest e4m3fn value (ties to even), saturating to ±448; NaN stays NaN. */
  public static byte fromFloat(float value) {
    if (Float.isNaN(value)) return 0x7F;
    int sign = value < 0 || (value == 0 && 1 / value < 0) ? 0x80 : 0;
    float f = Math.abs(value);
    if (f >= 464f) return (byte) (sign | 0x7E); // past the midpoint of 448 and the next step: saturate
    if (f < 0x1p-6f) return (byte) (sign | (int) Math.rint(f * 512f)); // subnormal steps of 2^-9 (8 → 2^-6)
    int bits = Float.floatToRawIntBits(f);
    int rounded = (bits + 0x7FFFF + ((bits >>> 20) & 1)) >>> 20; // exponent and 3 mantissa bits, ties to even
    int exponent = (rounded >>> 3) - 127 + 7;
    int code = (exponent << 3) | (rounded & 7);
    return (byte) (sign | Math.min(code, 0x7E));
  }
}
