package io.moemesh.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * What Hugging Face's {@code tokenizer_config.json} says about special tokens and chat formatting.
 *
 * @param bosToken the BOS token's text, or null
 * @param eosToken the EOS token's text, or null
 * @param padToken the padding token's text, or null
 * @param unkToken the unknown token's text, or null
 * @param addBosToken whether encoding a prompt prepends BOS (as {@code LlamaTokenizerFast} does)
 * @param addEosToken whether encoding a prompt appends EOS
 * @param chatTemplate the Jinja chat template: {@code chat_template} (a string, or the entry named "default" of a
 *     list), else the model directory's {@code chat_template.jinja}, else empty
 * @param modelMaxLength {@code model_max_length}, or 0 if absent
 */
public record TokenizerConfig(
    String bosToken,
    String eosToken,
    String padToken,
    String unkToken,
    boolean addBosToken,
    boolean addEosToken,
    Optional<String> chatTemplate,
    long modelMaxLength) {

  public static final String FILE_NAME = "tokenizer_config.json";
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Reads {@value #FILE_NAME} (required) and {@code chat_template.jinja} (optional) from a model directory. */
  public static TokenizerConfig read(Path modelDir) {
    Path file = modelDir.resolve(FILE_NAME);
    JsonNode root;
    try {
      root = JSON.readTree(Files.readAllBytes(file));
    } catch (NoSuchFileException e) {
      throw new TokenizerException(file + ": missing tokenizer config file");
    } catch (IOException e) {
      throw new TokenizerException(file + ": malformed JSON: " + e.getMessage(), e);
    }
    if (root == null || !root.isObject()) throw new TokenizerException(file + ": expected a JSON object");
    boolean llama = root.path("tokenizer_class").asText("").startsWith("LlamaTokenizer");
    return new TokenizerConfig(
        tokenText(root, "bos_token", file),
        tokenText(root, "eos_token", file),
        tokenText(root, "pad_token", file),
        tokenText(root, "unk_token", file),
        bool(root, "add_bos_token", llama, file),
        bool(root, "add_eos_token", false, file),
        chatTemplate(root, modelDir, file),
        root.path("model_max_length").asLong(0));
  }

  /** A token given as a string or as an {@code {"__type": "AddedToken", "content": ...}} object. */
  private static String tokenText(JsonNode root, String field, Path file) {
    JsonNode n = root.get(field);
    if (n == null || n.isNull()) return null;
    if (n.isTextual()) return n.asText();
    if (n.isObject() && n.path("content").isTextual()) return n.get("content").asText();
    throw new TokenizerException(file + ": " + field + " must be a string or an object with a \"content\" string");
  }

  private static boolean bool(JsonNode root, String field, boolean fallback, Path file) {
    JsonNode n = root.get(field);
    if (n == null || n.isNull()) return fallback;
    if (!n.isBoolean()) throw new TokenizerException(file + ": " + field + " must be true or false");
    return n.asBoolean();
  }

  private static Optional<String> chatTemplate(JsonNode root, Path modelDir, Path file) {
    JsonNode n = root.get("chat_template");
    if (n != null && n.isTextual()) return Optional.of(n.asText());
    if (n != null && n.isArray()) {
      for (JsonNode entry : n) {
        if ("default".equals(entry.path("name").asText()) && entry.path("template").isTextual()) {
          return Optional.of(entry.get("template").asText());
        }
      }
      throw new TokenizerException(file + ": chat_template list has no entry named \"default\"");
    }
    if (n != null && !n.isNull()) throw new TokenizerException(file + ": chat_template must be a string or a list");
    Path jinja = modelDir.resolve("chat_template.jinja");
    if (!Files.isRegularFile(jinja)) return Optional.empty();
    try {
      return Optional.of(Files.readString(jinja, StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new TokenizerException(jinja + ": cannot read: " + e.getMessage(), e);
    }
  }
}
