package io.moemesh.kvstore;

/** Element types a latent-KV object may hold: BF16 is the serving format ("C16"), F32 the exact mode. */
public enum KvDType {
  F32(4),
  BF16(2);

  private final int byteSize;

  KvDType(int byteSize) {
    this.byteSize = byteSize;
  }

  public int byteSize() {
    return byteSize;
  }
}
