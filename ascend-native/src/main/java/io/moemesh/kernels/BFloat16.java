package io.moemesh.kernels;

/** bfloat16: the upper 16 bits of an IEEE float. Conversion from float rounds to nearest, ties to even. */
public final class BFloat16 {
  private BFloat16() {}

  public static float toFloat(short bits) {
    return Float.intBitsToFloat((bits & 0xFFFF) << 16);
  }

  public static short fromFloat(float value) {
    int bits = Float.floatToRawIntBits(value);
    if (Float.isNaN(value)) return (short) ((bits >>> 16) | 0x0040); // keep it a (quiet) NaN
    int roundingBias = 0x7FFF + ((bits >>> 16) & 1);
    return (short) ((bits + roundingBias) >>> 16);
  }
}
