package io.moemesh.tokenizer;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes a real byte-level BPE tokenizer for a generated model, in DeepSeek-V3's layout: {@code tokenizer.json}
 * (loadable by Hugging Face {@code tokenizers}, in Python or through DJL) and {@code tokenizer_config.json}
 * ({@code LlamaTokenizerFast}, BOS added, a DeepSeek-V3 chat template).
 *
 * <p>Id layout for a vocabulary of V ids: the {@link #SPECIAL_TOKENS} first (BOS and EOS at the ids the model's
 * {@code config.json} names, the rest in list order), then the 256 byte tokens, then merges learned from the bundled
 * public-domain corpus (while a pair occurs at least twice), and, as DeepSeek-V3 does, the ids still free filled with
 * {@code <｜place▁holder▁no▁N｜>} tokens, so the vocabulary has exactly V ids. Unlike DeepSeek-V3 (about 800 of them,
 * as special added tokens), the placeholders here are plain vocabulary entries that no text encodes to: Hugging Face
 * {@code tokenizers} registers added tokens in quadratic time, and 124 000 of them (V = 129280) took four minutes to
 * load. Decoding a placeholder id therefore yields its text even with {@code skipSpecialTokens}.
 *
 * <p>Deterministic: the same arguments always give byte-identical files.
 */
public final class TokenizerFiles {
  public static final String BOS = "<｜begin▁of▁sentence｜>";
  public static final String EOS = "<｜end▁of▁sentence｜>";
  public static final String PAD = "<｜▁pad▁｜>";

  /** The special tokens in default id order; BOS, EOS and PAD are "special" (skipped when decoding), the rest not. */
  public static final List<String> SPECIAL_TOKENS = List.of(
      BOS, EOS, PAD, "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>",
      "<｜fim▁hole｜>", "<｜fim▁begin｜>", "<｜fim▁end｜>",
      "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
      "<｜tool▁outputs▁begin｜>", "<｜tool▁outputs▁end｜>", "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>",
      "<｜tool▁sep｜>");

  /** The chat template that generated models ship (a DeepSeek-V3-style template). */
  public static final String CHAT_TEMPLATE_RESOURCE = "deepseek_v3_chat_template.jinja";
  static final List<String> CORPUS = List.of(
      "declaration.txt", "lincoln.txt", "sonnets.txt", "poems.txt", "novels.txt", "tao_te_ching.txt",
      "classical_chinese.txt",
      "code_python.txt", "code_java.txt", "misc.txt");
  static final int MIN_MERGE_FREQUENCY = 2;
  static final int DEFAULT_MODEL_MAX_LENGTH = 16384;

  private static final ObjectMapper JSON = new ObjectMapper().disable(SerializationFeature.INDENT_OUTPUT);

  private TokenizerFiles() {}

  /** Writes both files with {@code model_max_length} {@value #DEFAULT_MODEL_MAX_LENGTH}; returns as {@link #write(Path, int, int, int, int)}. */
  public static int write(Path dir, int vocabSize, int bosId, int eosId) throws IOException {
    return write(dir, vocabSize, bosId, eosId, DEFAULT_MODEL_MAX_LENGTH);
  }

  /**
   * Writes {@code tokenizer.json} and {@code tokenizer_config.json} into {@code dir} (created if needed).
   *
   * @param vocabSize the model's {@code vocab_size}; at least {@code SPECIAL_TOKENS.size() + 256}
   * @param bosId,eosId the model's {@code bos_token_id} and {@code eos_token_id}; distinct, below the number of
   *     special tokens
   * @return the first placeholder id: ids below it are real tokens (specials, bytes, merges), the rest fillers
   */
  public static int write(Path dir, int vocabSize, int bosId, int eosId, int modelMaxLength) throws IOException {
    List<String> specials = specialTokenOrder(vocabSize, bosId, eosId);
    return write(dir, specials, Corpus.trained().truncate(vocabSize - specials.size() - 256), vocabSize, modelMaxLength);
  }

  /**
   * As {@link #write(Path, int, int, int, int)}, but the merges are learned from {@code corpus} instead of the
   * bundled texts: up to {@code vocabSize - specials - 256} of them, each pair seen at least
   * {@value #MIN_MERGE_FREQUENCY} times (a model trained on that corpus then sees its common words as single
   * tokens).
   */
  public static int write(Path dir, List<String> corpus, int vocabSize, int bosId, int eosId, int modelMaxLength)
      throws IOException {
    List<String> specials = specialTokenOrder(vocabSize, bosId, eosId);
    int maxNewTokens = vocabSize - specials.size() - 256;
    return write(dir, specials, BpeTrainer.train(corpus, MIN_MERGE_FREQUENCY, maxNewTokens), vocabSize, modelMaxLength);
  }

  private static int write(Path dir, List<String> specials, BpeTrainer.Result bpe, int vocabSize, int modelMaxLength)
      throws IOException {
    Files.createDirectories(dir);
    ObjectNode tokenizer = tokenizerJson(specials, bpe, vocabSize);
    Files.write(dir.resolve("tokenizer.json"), JSON.writeValueAsBytes(tokenizer));
    ObjectNode config = tokenizerConfig(BOS, EOS, modelMaxLength);
    Files.write(dir.resolve("tokenizer_config.json"),
        JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(config));
    return specials.size() + 256 + bpe.merges().size();
  }

  /** The chat template generated models ship, from the classpath. */
  public static String chatTemplate() {
    return Corpus.resource(CHAT_TEMPLATE_RESOURCE);
  }

  static List<String> specialTokenOrder(int vocabSize, int bosId, int eosId) {
    int n = SPECIAL_TOKENS.size();
    if (vocabSize < n + 256) {
      throw new IllegalArgumentException("vocab_size " + vocabSize + " is below the minimum " + (n + 256)
          + " (" + n + " special tokens + 256 byte tokens)");
    }
    if (bosId < 0 || bosId >= n || eosId < 0 || eosId >= n || bosId == eosId) {
      throw new IllegalArgumentException("bos_token_id " + bosId + " and eos_token_id " + eosId
          + " must be distinct ids below " + n);
    }
    List<String> rest = new ArrayList<>(SPECIAL_TOKENS.subList(2, n));
    String[] order = new String[n];
    order[bosId] = BOS;
    order[eosId] = EOS;
    for (int i = 0; i < n; i++) if (order[i] == null) order[i] = rest.removeFirst();
    return List.of(order);
  }

  private static ObjectNode tokenizerJson(List<String> specials, BpeTrainer.Result bpe, int vocabSize) {
    JsonNodeFactory f = JsonNodeFactory.instance;
    ObjectNode root = f.objectNode().put("version", "1.0");
    root.putNull("truncation");
    root.putNull("padding");
    ArrayNode added = root.putArray("added_tokens");
    for (int id = 0; id < specials.size(); id++) {
      String s = specials.get(id);
      addedToken(added, id, s, s.equals(BOS) || s.equals(EOS) || s.equals(PAD));
    }
    root.putNull("normalizer");
    root.set("pre_tokenizer", PreTokenizer.toJson());
    root.putNull("post_processor");
    root.putObject("decoder").put("type", "ByteLevel").put("add_prefix_space", true)
        .put("trim_offsets", true).put("use_regex", true);
    ObjectNode model = root.putObject("model").put("type", "BPE");
    model.putNull("dropout");
    model.putNull("unk_token");
    model.putNull("continuing_subword_prefix");
    model.putNull("end_of_word_suffix");
    model.put("fuse_unk", false).put("byte_fallback", false);
    ObjectNode vocab = model.putObject("vocab");
    for (int id = 0; id < specials.size(); id++) vocab.put(specials.get(id), id);
    for (int i = 0; i < bpe.tokens().size(); i++) {
      if (vocab.has(bpe.tokens().get(i))) {
        throw new IllegalStateException("learned token " + bpe.tokens().get(i) + " collides with a special token");
      }
      vocab.put(bpe.tokens().get(i), specials.size() + i);
    }
    int firstPlaceholder = specials.size() + bpe.tokens().size();
    for (int id = firstPlaceholder; id < vocabSize; id++) vocab.put(placeholder(id - firstPlaceholder), id);
    ArrayNode merges = model.putArray("merges");
    for (BpeTrainer.Merge m : bpe.merges()) merges.add(m.left() + " " + m.right());
    return root;
  }

  static String placeholder(int n) {
    return "<｜place▁holder▁no▁" + n + "｜>";
  }

  private static void addedToken(ArrayNode added, int id, String content, boolean special) {
    added.addObject().put("id", id).put("content", content).put("single_word", false).put("lstrip", false)
        .put("rstrip", false).put("normalized", !special).put("special", special);
  }

  private static ObjectNode tokenizerConfig(String bos, String eos, int modelMaxLength) {
    ObjectNode c = JsonNodeFactory.instance.objectNode();
    c.put("add_bos_token", true).put("add_eos_token", false);
    c.set("bos_token", addedTokenRef(bos));
    c.put("clean_up_tokenization_spaces", false);
    c.set("eos_token", addedTokenRef(eos));
    c.put("legacy", true).put("model_max_length", modelMaxLength);
    c.set("pad_token", addedTokenRef(PAD));
    c.putObject("sp_model_kwargs");
    c.putNull("unk_token");
    c.put("tokenizer_class", "LlamaTokenizerFast");
    c.put("chat_template", chatTemplate());
    return c;
  }

  private static ObjectNode addedTokenRef(String content) {
    return JsonNodeFactory.instance.objectNode().put("__type", "AddedToken").put("content", content)
        .put("lstrip", false).put("normalized", true).put("rstrip", false).put("single_word", false);
  }

  /** The bundled corpus and its training, done once per JVM (training is a pure function of the corpus). */
  static final class Corpus {
    private static volatile BpeTrainer.Result trained;

    static BpeTrainer.Result trained() {
      BpeTrainer.Result r = trained;
      if (r == null) {
        synchronized (Corpus.class) {
          if (trained == null) trained = BpeTrainer.train(texts(), MIN_MERGE_FREQUENCY, Integer.MAX_VALUE);
          r = trained;
        }
      }
      return r;
    }

    static List<String> texts() {
      return CORPUS.stream().map(name -> resource("corpus/" + name)).toList();
    }

    static String resource(String name) {
      try (InputStream in = TokenizerFiles.class.getResourceAsStream(name)) {
        if (in == null) throw new IllegalStateException("missing classpath resource " + name);
        return new String(in.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read classpath resource " + name, e);
      }
    }
  }
}
