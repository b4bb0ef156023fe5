package io.moemesh.model.tokenizer;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Turns a stream of generated token ids into text deltas without ever emitting half a character. With byte-level
 * BPE one emoji or CJK character often spans several tokens, and decoding a prefix of them alone yields U+FFFD.
 *
 * <p>Two strategies, picked by the tokenizer:
 * <ul>
 *   <li>Byte-level tokenizers (DeepSeek-V3's): each token's bytes go into a buffer, and only the longest prefix that
 *       is complete UTF-8 is emitted; the bytes of a character still being spelled out wait for the next token.
 *       Bytes that can never become valid UTF-8 are emitted as U+FFFD at once, exactly as a full decode would.
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
  private final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
      .onMalformedInput(CodingErrorAction.REPLACE)
      .onUnmappableCharacter(CodingErrorAction.REPLACE);
  private ByteBuffer pending = ByteBuffer.allocate(16); // write mode; bytes not yet emitted
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
      pending.flip();
      CharBuffer out = CharBuffer.allocate(pending.remaining() * 2 + 1);
      utf8.decode(pending, out, true);
      utf8.flush(out);
      utf8.reset();
      pending.clear();
      return out.flip().toString();
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
    if (pending.remaining() < bytes.length) {
      ByteBuffer bigger = ByteBuffer.allocate(Math.max(pending.capacity() * 2, pending.position() + bytes.length));
      pending.flip();
      pending = bigger.put(pending);
    }
    pending.put(bytes);
    pending.flip();
    CharBuffer out = CharBuffer.allocate(pending.remaining() + 1);
    utf8.decode(pending, out, false); // stops before an incomplete trailing sequence
    pending.compact();
    return out.flip().toString();
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
