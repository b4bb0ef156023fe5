package io.moemesh.kernels;

/** Element types a {@link Tensor} can hold. Codes are the C ABI's {@code MK_DTYPE_*} values. */
public enum DType {
  F32(4, 0),
  BF16(2, 1),
  /** FP8 e4m3fn as DeepSeek-V3 ships its weights: 4 exponent bits (bias 7), 3 mantissa bits, no infinities. */
  F8_E4M3(1, 2),
  I8(1, 3),
  I32(4, 4);

  private final int byteSize;
  private final int code;

  DType(int byteSize, int code) {
    this.byteSize = byteSize;
    this.code = code;
  }

  public int byteSize() {
    return byteSize;
  }

  int code() {
    return code;
  }
}
