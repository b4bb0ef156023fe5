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
}
