package io.moemesh.model.checkpoint;

import io.moemesh.kernels.DType;

/**
 * The element types this reader accepts in a safetensors header, spelled as the format spells them. Only some
 * of them can be loaded into a {@link io.moemesh.kernels.Tensor}; see {@link Checkpoint#load}.
 */
public enum StDType {
  BF16(2),
  F16(2),
  F32(4),
  /** FP8 e4m3fn, DeepSeek-V3's weight format (with F32 {@code <name>_scale_inv} per 128×128 block). */
  F8_E4M3(1),
  I8(1),
  I32(4),
  I64(8),
  U8(1),
  BOOL(1);

  private final int byteSize;

  StDType(int byteSize) {
    this.byteSize = byteSize;
  }

  public int byteSize() {
    return byteSize;
  }

  /** The type named {@code name} in a header, or {@code null} when this reader does not accept it. */
  static StDType parse(String name) {
    for (StDType t : values()) if (t.name().equals(name)) return t;
    return null;
  }

  /** The header type of a kernel tensor: every kernel {@link DType} has one. */
  public static StDType of(DType dtype) {
    return switch (dtype) {
      case F32 -> F32;
      case BF16 -> BF16;
      case F8_E4M3 -> F8_E4M3;
      case I8 -> I8;
      case I32 -> I32;
    };
  }
}
