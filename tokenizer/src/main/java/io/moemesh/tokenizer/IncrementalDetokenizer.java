package io.moemesh.tokenizer;

import java.util.Arrays;

/**
 * Turns a stream of generated token ids into text deltas without ever emitting half a character. With byte-level
 * BPE one emoji or CJK character often spans several tokens, and decoding a prefix of them alone yields U+FFFD.
 *
 * <p>Two strategies, picked by the tokenizer:
 * <ul>
 *   <li>Byte-level tokenizers (DeepSeek-V3's): each token's bytes go into a buffer, and only the longest prefix that
 *       is complete UTF-8 is emitted; the bytes of a character still being spelled out wait for the next token.
 *       Bytes that can never become valid UTF-8 are emitted as U+FFFD at once, one per maximal invalid subpart,
 *       exactly as the Hugging Face decoder (Rust's {@code from_utf8_lossy}) does for the full sequence.
 *   <li>Other tokenizers: the prefix-offset / read-offset technique of vLLM (and HF text-generation-inference):
 *       decode a short window of recent tokens with and without the new one and emit the difference, unless it ends
 *       in U+FFFD (an incomplete character), in which case wait.
 * </ul>
 * For byte-level tokenizers the concatenation of every {@link #add} result and {@link #finish()} equals
 * {@code tokenizer.decode(allIds, skipSpecialTokens)} exactly; with the offset technique it can differ where a
 * decoder treats the start of a window specially (e.g. Metaspace dropping a leading space).
 *
 * <p>Not thread-safe: one instance per sequence.
 */
public final class IncrementalDetokenizer {
  private final Tokenizer tokenizer;
  private final boolean skipSpecialTokens;
  // Byte-level strategy.
  private byte[] pending = new byte[16]; // bytes not yet emitted: at most one incomplete character
  private int numPending;
  // Offset strategy.
  private int[] ids = new int[16];
  private int numIds;
  private int prefixOffset;
  private int readOffset;

  public IncrementalDetokenizer(Tokenizer tokenizer, boolean skipSpecialTokens) {
    this.tokenizer = tokenizer;
    this.skipSpecialTokens = skipSpecialTokens;
  }

  /** Feeds one generated token and returns the text it completes (often empty). */
  public String add(int tokenId) {
    return tokenizer.isByteLevel() ? addBytes(tokenId) : addWithOffsets(tokenId);
  }

  /** Ends the stream: returns what was held back, incomplete bytes as U+FFFD. The detokenizer may then be reused. */
  public String finish() {
    if (tokenizer.isByteLevel()) {
      StringBuilder out = new StringBuilder();
      decodeUtf8(pending, numPending, true, out);
      numPending = 0;
      return out.toString();
    }
    String prefixText = window(readOffset);
    String all = window(numIds);
    String delta = all.length() > prefixText.length() ? all.substring(prefixText.length()) : "";
    numIds = prefixOffset = readOffset = 0;
    return delta;
  }

  private String addBytes(int tokenId) {
    byte[] bytes = tokenizer.tokenBytes(tokenId);
    if (skipSpecialTokens && tokenizer.isSpecial(tokenId)) return "";
    if (numPending + bytes.length > pending.length) {
      pending = Arrays.copyOf(pending, Math.max(pending.length * 2, numPending + bytes.length));
    }
    System.arraycopy(bytes, 0, pending, numPending, bytes.length);
    numPending += bytes.length;
    StringBuilder out = new StringBuilder(numPending);
    int consumed = decodeUtf8(pending, numPending, false, out);
    System.arraycopy(pending, consumed, pending, 0, numPending - consumed);
    numPending -= consumed;
    return out.toString();
  }

  /**
   * Decodes {@code bytes[0, length)} into {@code out} like Rust's {@code String::from_utf8_lossy} (which the
   * Hugging Face decoder uses): each maximal invalid subpart becomes one U+FFFD (Unicode's recommended practice;
   * Java's own decoder differs, e.g. on encoded surrogates). Unless {@code endOfInput}, an incomplete but still
   * valid sequence at the end is left undecoded.
   *
   * @return the number of bytes consumed
   */
  static int decodeUtf8(byte[] bytes, int length, boolean endOfInput, StringBuilder out) {
    int i = 0;
    next:
    while (i < length) {
      int b0 = bytes[i] & 0xFF;
      if (b0 < 0x80) {
        out.append((char) b0);
        i++;
        continue;
      }
      int need;
      int lo = 0x80;
      int hi = 0xBF;
      if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
      } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 2;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F; // no surrogates
      } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 3;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F; // nothing above U+10FFFF
      } else {
        out.append('\uFFFD');
        i++;
        continue;
      }
      int codePoint = b0 & (0x3F >> need);
      int j = i + 1;
      for (int k = 0; k < need; k++, j++, lo = 0x80, hi = 0xBF) {
        if (j == length) {
          if (!endOfInput) return i;
          out.append('\uFFFD');
          return length;
        }
        int b = bytes[j] & 0xFF;
        if (b < lo || b > hi) {
          out.append('\uFFFD');
          i = j;
          continue next;
        }
        codePoint = (codePoint << 6) | (b & 0x3F);
      }
      out.appendCodePoint(codePoint);
      i = j;
    }
    return length;
  }

  private String addWithOffsets(int tokenId) {
    if (numIds == ids.length) ids = Arrays.copyOf(ids, ids.length * 2);
    ids[numIds++] = tokenId;
    String prefixText = window(readOffset);
    String newText = window(numIds);
    if (newText.length() > prefixText.length() && !newText.endsWith("\uFFFD")) {
      prefixOffset = readOffset;
      readOffset = numIds;
      return newText.substring(prefixText.length());
    }
    return "";
  }

  /** Decodes ids[prefixOffset, end). */
  private String window(int end) {
    return tokenizer.decode(Arrays.copyOfRange(ids, prefixOffset, end), skipSpecialTokens);
  }
}
