package io.moemesh.tokenizer;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.huggingface.tokenizers.jni.TokenizersLibrary;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.lang.ref.Reference;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A Hugging Face tokenizer ({@code tokenizer.json} + {@code tokenizer_config.json}), run by the {@code tokenizers}
 * Rust core through DJL's JNI binding.
 *
 * <p>The native tokenizer never adds special tokens itself: {@link #encode(String)} returns exactly the text's
 * tokens (special-token strings in the text, such as those a chat template emits, still become their single ids),
 * and {@link #encode(String, boolean)} adds BOS/EOS as {@code tokenizer_config.json}'s {@code add_bos_token} /
 * {@code add_eos_token} say, as {@code transformers}' {@code LlamaTokenizerFast} does. Truncation and padding are
 * off.
 *
 * <p><b>Thread safety.</b> Encode and decode may run concurrently from any number of threads. DJL's
 * {@code HuggingFaceTokenizer} keeps no mutable Java state after construction, and its JNI entry points
 * ({@code TokenizersLibrary.encode}, {@code decode}) call only {@code &self} methods of the Rust {@code Tokenizer}
 * ({@code encode_char_offsets}, {@code decode}), which is {@code Sync}; its one shared mutable part, the BPE word
 * cache, sits behind an {@code RwLock}. (DJL's JNI glue casts the handle to {@code &mut Tokenizer}, a formal aliasing
 * violation, but nothing mutates through it after construction, where DJL sets padding and truncation.) What is not
 * safe in DJL is {@code close()} racing a call, a use-after-free in native code, so this class guards calls with a
 * read lock and {@link #close()} with the write lock; a call after close throws {@link IllegalStateException}.
 *
 * <p>Encoding calls the JNI layer directly and fetches only the ids: DJL's {@code Encoding} would also build token
 * strings and one {@code CharSpan} object per token through JNI.
 */
public final class Tokenizer implements AutoCloseable {
  public static final String FILE_NAME = "tokenizer.json";
  // Not canonicalizing field names: a vocabulary's 100 000 distinct keys thrash Jackson's symbol table (1 s → 20 ms).
  private static final ObjectMapper JSON =
      new ObjectMapper(JsonFactory.builder().disable(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES).build());

  static {
    // DJL pings an EC2 metadata address and a telemetry endpoint when a tokenizer is created, unless opted out.
    if (System.getProperty("OPT_OUT_TRACKING") == null) System.setProperty("OPT_OUT_TRACKING", "true");
  }

  private final Path directory;
  private final HuggingFaceTokenizer hfTokenizer;
  private final long handle;
  private final TokenizerConfig config;
  private final Vocabulary vocab;
  private final int bosId;
  private final int eosId;
  private final int padId;
  private final Map<Character, List<String>> addedByFirstChar;
  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private boolean closed; // guarded by lock

  private Tokenizer(Path directory, byte[] json, JsonNode root, TokenizerConfig config) {
    Path file = directory.resolve(FILE_NAME);
    this.directory = directory;
    this.config = config;
    this.vocab = Vocabulary.parse(root, file);
    this.addedByFirstChar = byFirstChar(vocab.addedTokens());
    this.bosId = idOf(config.bosToken(), "bos_token");
    this.eosId = idOf(config.eosToken(), "eos_token");
    this.padId = idOf(config.padToken(), "pad_token");
    try {
      this.hfTokenizer = HuggingFaceTokenizer.newInstance(new ByteArrayInputStream(json),
          Map.of("addSpecialTokens", "false", "truncation", "false", "padding", "false"));
    } catch (IOException | RuntimeException e) {
      throw new TokenizerException(file + ": Hugging Face tokenizers cannot load it: " + e.getMessage(), e);
    }
    this.handle = hfTokenizer.getHandle();
  }

  /** Loads {@value #FILE_NAME} and {@value TokenizerConfig#FILE_NAME} from a model directory. */
  public static Tokenizer load(Path modelDir) {
    Path file = modelDir.resolve(FILE_NAME);
    byte[] json;
    JsonNode root;
    try {
      json = Files.readAllBytes(file);
      root = JSON.readTree(json);
    } catch (NoSuchFileException e) {
      throw new TokenizerException(file + ": missing tokenizer file");
    } catch (IOException e) {
      throw new TokenizerException(file + ": malformed JSON: " + e.getMessage(), e);
    }
    if (root == null || !root.isObject()) throw new TokenizerException(file + ": expected a JSON object");
    return new Tokenizer(modelDir, json, root, TokenizerConfig.read(modelDir));
  }

  private int idOf(String token, String field) {
    if (token == null) return -1;
    Integer id = vocab.tokenToId().get(token);
    if (id == null) {
      throw new TokenizerException(directory.resolve(TokenizerConfig.FILE_NAME) + ": " + field + " " + token
          + " is not in the vocabulary of " + directory.resolve(FILE_NAME));
    }
    return id;
  }

  /** The text's token ids, without BOS/EOS. */
  public int[] encode(String text) {
    String input = withoutLoneSurrogates(text);
    lock.readLock().lock();
    try {
      ensureOpen();
      long encoding = TokenizersLibrary.LIB.encode(handle, input, false);
      try {
        return toInts(TokenizersLibrary.LIB.getTokenIds(encoding));
      } finally {
        TokenizersLibrary.LIB.deleteEncoding(encoding);
      }
    } finally {
      lock.readLock().unlock();
      Reference.reachabilityFence(hfTokenizer); // its finalizer frees the native handle in use above
    }
  }

  /**
   * The text's token ids with every added-token string in it taken as plain text: no special id comes out of it
   * ({@link ChatEncoder} encodes what a client wrote this way). Around each added-token string the text is encoded in
   * pieces, the string itself split after its first character, so merges across those cuts are lost: the ids are a
   * valid encoding of the same text, not always the shortest.
   */
  public int[] encodeAsText(String text) {
    List<int[]> pieces = new java.util.ArrayList<>();
    int from = 0;
    for (int i = 0; i < text.length(); i++) {
      if (addedTokenAt(text, i) == null) continue;
      int cut = i + Character.charCount(text.codePointAt(i)); // within the token: it cannot match whole again
      pieces.add(encode(text.substring(from, cut)));
      from = cut;
      i = cut - 1;
    }
    if (pieces.isEmpty()) return encode(text);
    pieces.add(encode(text.substring(from)));
    return pieces.stream().flatMapToInt(java.util.Arrays::stream).toArray();
  }

  /** The longest added token's text that starts at {@code text[at]}, or null. */
  String addedTokenAt(String text, int at) {
    List<String> candidates = addedByFirstChar.get(text.charAt(at));
    if (candidates == null) return null;
    for (String token : candidates) if (text.startsWith(token, at)) return token; // longest first
    return null;
  }

  /** The added tokens' texts by their first character, longest first. */
  private static Map<Character, List<String>> byFirstChar(List<AddedToken> tokens) {
    Map<Character, List<String>> map = new java.util.HashMap<>();
    for (AddedToken t : tokens)
      if (!t.content().isEmpty()) map.computeIfAbsent(t.content().charAt(0), c -> new java.util.ArrayList<>()).add(t.content());
    map.values().forEach(list -> list.sort(java.util.Comparator.comparingInt(String::length).reversed()));
    return Map.copyOf(map);
  }

  /**
   * The text's token ids; with {@code addSpecialTokens}, BOS first if {@code add_bos_token} and EOS last if
   * {@code add_eos_token}. A chat-template rendering already holds its BOS text: encode it with {@link #encode}.
   */
  public int[] encode(String text, boolean addSpecialTokens) {
    int[] ids = encode(text);
    boolean bos = addSpecialTokens && config.addBosToken() && bosId >= 0;
    boolean eos = addSpecialTokens && config.addEosToken() && eosId >= 0;
    if (!bos && !eos) return ids;
    int[] out = new int[ids.length + (bos ? 1 : 0) + (eos ? 1 : 0)];
    if (bos) out[0] = bosId;
    System.arraycopy(ids, 0, out, bos ? 1 : 0, ids.length);
    if (eos) out[out.length - 1] = eosId;
    return out;
  }

  /** Decodes ids to text; invalid UTF-8 becomes U+FFFD. Ids outside {@code [0, vocabSize)} are an error. */
  public String decode(int[] ids, boolean skipSpecialTokens) {
    long[] longs = new long[ids.length];
    for (int i = 0; i < ids.length; i++) longs[i] = checkId(ids[i]);
    lock.readLock().lock();
    try {
      ensureOpen();
      return TokenizersLibrary.LIB.decode(handle, longs, skipSpecialTokens);
    } finally {
      lock.readLock().unlock();
      Reference.reachabilityFence(hfTokenizer);
    }
  }

  /** A streaming decoder for one sequence (not thread-safe; one per request). */
  public IncrementalDetokenizer newDetokenizer(boolean skipSpecialTokens) {
    return new IncrementalDetokenizer(this, skipSpecialTokens);
  }

  /** The number of ids, i.e. the largest id in the vocabulary or the added tokens, plus one. */
  public int vocabSize() {
    return vocab.size();
  }

  public OptionalInt tokenToId(String token) {
    Integer id = vocab.tokenToId().get(token);
    return id == null ? OptionalInt.empty() : OptionalInt.of(id);
  }

  /** The token's vocabulary string (byte-level tokens in their GPT-2 spelling, e.g. {@code Ġthe}). */
  public Optional<String> idToToken(int id) {
    return id >= 0 && id < vocab.size() ? Optional.ofNullable(vocab.idToToken()[id]) : Optional.empty();
  }

  /** BOS id, or -1 if the config names none. */
  public int bosId() {
    return bosId;
  }

  /** EOS id, or -1 if the config names none. */
  public int eosId() {
    return eosId;
  }

  /** Padding id, or -1 if the config names none. */
  public int padId() {
    return padId;
  }

  public List<AddedToken> addedTokens() {
    return vocab.addedTokens();
  }

  /** The texts of the added tokens marked special (those {@code skipSpecialTokens} drops). */
  public Set<String> specialTokens() {
    Set<String> out = new LinkedHashSet<>();
    for (AddedToken t : vocab.addedTokens()) if (t.special()) out.add(t.content());
    return Collections.unmodifiableSet(out);
  }

  public boolean isSpecial(int id) {
    return id >= 0 && id < vocab.size() && vocab.special()[id];
  }

  /** Whether the decoder is byte-level, so {@link #tokenBytes} is available. */
  public boolean isByteLevel() {
    return vocab.tokenBytes() != null;
  }

  /** The UTF-8 bytes the token contributes to decoded text (byte-level tokenizers only); do not modify. */
  byte[] tokenBytes(int id) {
    if (vocab.tokenBytes() == null) throw new UnsupportedOperationException("not byte-level: " + directory);
    return vocab.tokenBytes()[checkId(id)];
  }

  public TokenizerConfig config() {
    return config;
  }

  /** The chat template of {@code tokenizer_config.json}, bound to this tokenizer's special tokens. */
  public Optional<ChatTemplate> chatTemplate() {
    return config.chatTemplate().map(source -> new ChatTemplate(source, ChatTemplate.specialTokensOf(config)));
  }

  public Path directory() {
    return directory;
  }

  @Override
  public void close() {
    lock.writeLock().lock();
    try {
      if (!closed) hfTokenizer.close();
      closed = true;
    } finally {
      lock.writeLock().unlock();
    }
  }

  private void ensureOpen() {
    if (closed) throw new IllegalStateException("tokenizer closed: " + directory);
  }

  private int checkId(int id) {
    if (id < 0 || id >= vocab.size()) {
      throw new IllegalArgumentException("token id " + id + " outside [0, " + vocab.size() + ")");
    }
    return id;
  }

  private static int[] toInts(long[] ids) {
    int[] out = new int[ids.length];
    for (int i = 0; i < ids.length; i++) out[i] = (int) ids[i];
    return out;
  }

  /** JNI's string conversion cannot take unpaired surrogates; they become U+FFFD, as UTF-8 encoding would do. */
  static String withoutLoneSurrogates(String s) {
    StringBuilder out = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean paired = Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
      if (paired) {
        if (out != null) out.append(c).append(s.charAt(i + 1));
        i++;
      } else if (Character.isSurrogate(c)) {
        if (out == null) out = new StringBuilder(s.length()).append(s, 0, i);
        out.append('\uFFFD');
      } else if (out != null) {
        out.append(c);
      }
    }
    return out == null ? s : out.toString();
  }
}
