package io.moemesh.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * GPT-2's byte-to-unicode map, which Hugging Face's {@code ByteLevel} pre-tokenizer and decoder use: every byte
 * becomes one printable code point so a byte-level vocabulary can be stored as JSON text. Printable Latin-1 bytes
 * ({@code !..~}, {@code ¡..¬}, {@code ®..ÿ}) map to themselves; the other 68 bytes map to U+0100 and up, in byte
 * order (so the space 0x20 becomes {@code Ġ} U+0120 and the newline 0x0A becomes {@code Ċ} U+010A).
 */
public final class ByteLevel {
  private static final char[] BYTE_TO_CHAR = new char[256];
  private static final int[] CHAR_TO_BYTE = new int[256 + 68];

  static {
    java.util.Arrays.fill(CHAR_TO_BYTE, -1);
    int next = 256;
    for (int b = 0; b < 256; b++) {
      boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char c = printable ? (char) b : (char) next++;
      BYTE_TO_CHAR[b] = c;
      CHAR_TO_BYTE[c] = b;
    }
  }

  private ByteLevel() {}

  /** The code point that stands for {@code b} (0..255) in a byte-level vocabulary. */
  public static char charOf(int b) {
    return BYTE_TO_CHAR[b & 0xFF];
  }

  /** Maps UTF-8 bytes to their byte-level string, one char per byte. */
  public static String encode(byte[] bytes) {
    char[] out = new char[bytes.length];
    for (int i = 0; i < bytes.length; i++) out[i] = BYTE_TO_CHAR[bytes[i] & 0xFF];
    return new String(out);
  }

  /** Maps text to the byte-level string of its UTF-8 bytes. */
  public static String encode(String text) {
    return encode(text.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * The bytes a token contributes to decoded text, exactly as the Hugging Face {@code ByteLevel} decoder treats
   * it: if every char of the token is a byte-level char, the bytes they stand for; otherwise (an added token such
   * as {@code <｜User｜>}) the token's own UTF-8 bytes.
   */
  public static byte[] decode(String token) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(token.length());
    for (int i = 0; i < token.length(); i++) {
      char c = token.charAt(i);
      int b = c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
      if (b < 0) return token.getBytes(StandardCharsets.UTF_8);
      out.write(b);
    }
    return out.toByteArray();
  }
}
