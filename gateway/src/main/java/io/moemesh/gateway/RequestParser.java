package io.moemesh.gateway;

import static io.moemesh.gateway.JsonFields.bool;
import static io.moemesh.gateway.JsonFields.get;
import static io.moemesh.gateway.JsonFields.integer;
import static io.moemesh.gateway.JsonFields.longValue;
import static io.moemesh.gateway.JsonFields.number;
import static io.moemesh.gateway.JsonFields.string;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moemesh.gateway.GenerationRequest.Endpoint;
import io.moemesh.gateway.GenerationRequest.Prompt;
import io.moemesh.model.sampling.SamplingParams;
import io.moemesh.tokenizer.ChatMessage;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns an OpenAI request body into a {@link GenerationRequest}, or an {@link ApiError} (400) naming the field.
 * Sampling ranges and their messages come from the model's {@link SamplingParams}, so every service words them
 * the same way. Pure: no model, no framework (the model name and the context length are checked later).
 */
final class RequestParser {
  /** Strict: trailing data after the JSON value is an error, not ignored. */
  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
  private final int maxN, maxChoices;

  RequestParser(int maxN) {
    this(maxN, Integer.MAX_VALUE);
  }

  RequestParser(int maxN, int maxChoices) {
    this.maxN = maxN;
    this.maxChoices = maxChoices;
  }

  GenerationRequest parse(Endpoint endpoint, byte[] body) {
    JsonNode root = readObject(body);
    String model = string(root, "model", "model");
    if (model == null) throw ApiError.invalid("you must provide a model parameter", "model");
    boolean chat = endpoint == Endpoint.CHAT;
    List<ChatMessage> messages = chat ? ChatMessages.parse(root.get("messages")) : List.of();
    List<Prompt> prompts = chat ? List.of() : prompts(get(root, "prompt"));
    if (!chat) rejectUnsupported(root);
    rejectNotImplemented(root);
    int n = orDefault(integer(root, "n"), 1);
    if (n < 1 || n > maxN) throw ApiError.invalid("n must be in [1, " + maxN + "], got " + n, "n");
    long choices = (long) Math.max(1, prompts.size()) * n;
    if (choices > maxChoices) {
      throw ApiError.invalid("This request asks for " + choices + " generations (" + Math.max(1, prompts.size()) + " prompts × n = "
          + n + "); at most " + maxChoices + " are allowed per request", chat ? "n" : "prompt");
    }
    boolean stream = orDefault(bool(root, "stream"), false);
    boolean includeUsage = includeUsage(root, stream);
    Integer maxTokens = maxTokens(root, chat);
    Integer topLogprobs = chat ? chatLogprobs(root) : integer(root, "logprobs");
    SamplingParams sampling = sampling(root, topLogprobs, chat);
    String user = string(root, "user", "user");
    return new GenerationRequest(endpoint, model, messages, prompts, n, stream, includeUsage, maxTokens,
        stop(get(root, "stop")), sampling, topLogprobs, user);
  }

  /** The body as a JSON object (strict: trailing data is an error), else the 400 that says why. */
  static JsonNode readObject(byte[] body) {
    JsonNode root;
    try {
      root = JSON.readTree(body);
    } catch (JsonProcessingException e) {
      throw ApiError.invalid("We could not parse the JSON body of your request. The API expects a JSON payload, "
          + "but what was sent was not valid JSON: " + e.getOriginalMessage(), null);
    } catch (IOException e) {
      throw ApiError.invalid("We could not read the body of your request: " + e.getMessage(), null);
    }
    if (root == null || !root.isObject()) throw ApiError.invalid("The request body must be a JSON object.", null);
    return root;
  }

  private static boolean includeUsage(JsonNode root, boolean stream) {
    JsonNode options = get(root, "stream_options");
    if (options == null) return false;
    if (!options.isObject()) throw JsonFields.wrongType("stream_options", "an object", options);
    if (!stream) {
      throw ApiError.invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.",
          "stream_options");
    }
    JsonNode include = get(options, "include_usage");
    if (include == null) return false;
    if (!include.isBoolean()) throw JsonFields.wrongType("stream_options.include_usage", "a boolean", include);
    return include.asBoolean();
  }

  /** Chat: {@code max_completion_tokens} (current name) wins over the deprecated {@code max_tokens}. */
  private static Integer maxTokens(JsonNode root, boolean chat) {
    String name = chat && get(root, "max_completion_tokens") != null ? "max_completion_tokens" : "max_tokens";
    Integer value = integer(root, name);
    if (value != null && value < 1) throw ApiError.invalid(name + " must be at least 1, got " + value, name);
    return value;
  }

  private static Integer chatLogprobs(JsonNode root) {
    boolean logprobs = orDefault(bool(root, "logprobs"), false);
    Integer top = integer(root, "top_logprobs");
    if (top == null) return logprobs ? 0 : null;
    if (top < 0 || top > SamplingParams.MAX_LOGPROBS) {
      throw ApiError.invalid("top_logprobs must be in [0, " + SamplingParams.MAX_LOGPROBS + "], got " + top,
          "top_logprobs");
    }
    if (!logprobs) throw ApiError.invalid("top_logprobs requires logprobs to be true", "top_logprobs");
    return top;
  }

  private static SamplingParams sampling(JsonNode root, Integer topLogprobs, boolean chat) {
    SamplingParams.Builder b = SamplingParams.builder()
        .temperature(orDefault(number(root, "temperature"), 1.0))
        .topP(orDefault(number(root, "top_p"), 1.0))
        .topK(orDefault(integer(root, "top_k"), 0))
        .minP(orDefault(number(root, "min_p"), 0.0))
        .presencePenalty(orDefault(number(root, "presence_penalty"), 0.0))
        .frequencyPenalty(orDefault(number(root, "frequency_penalty"), 0.0))
        .repetitionPenalty(orDefault(number(root, "repetition_penalty"), 1.0))
        .seed(longValue(root, "seed"))
        .logprobs(topLogprobs)
        .ignoreEos(orDefault(bool(root, "ignore_eos"), false))
        .logitBias(logitBias(get(root, "logit_bias")));
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      // SamplingParams' messages start with the wire name of the bad field: "top_p must be in (0, 1], got 1.5".
      String message = e.getMessage();
      String param = message.substring(0, Math.max(0, message.indexOf(' ')));
      if (chat && param.equals("logprobs")) param = "top_logprobs";
      throw ApiError.invalid(message, param.isEmpty() ? null : param);
    }
  }

  /** OpenAI's {@code logit_bias}: an object from token ids (as strings) to numbers; null or {} is none. */
  static Map<Integer, Float> logitBias(JsonNode bias) {
    if (bias == null || bias.isNull()) return Map.of();
    if (!bias.isObject()) throw JsonFields.wrongType("logit_bias", "an object from token ids to numbers", bias);
    Map<Integer, Float> out = new HashMap<>();
    for (var field : bias.properties()) {
      int id;
      try {
        id = Integer.parseInt(field.getKey());
      } catch (NumberFormatException e) {
        throw ApiError.invalid("logit_bias keys must be token ids, got \"" + field.getKey().substring(0, Math.min(32, field.getKey().length())) + "\"", "logit_bias");
      }
      if (!field.getValue().isNumber()) throw JsonFields.wrongType("logit_bias", "an object from token ids to numbers", bias);
      out.put(id, field.getValue().floatValue());
    }
    return out;
  }

  static List<String> stop(JsonNode stop) {
    if (stop == null) return List.of();
    List<String> out = new ArrayList<>();
    if (stop.isTextual()) {
      out.add(stop.asText());
    } else if (stop.isArray()) {
      for (JsonNode s : stop) {
        if (!s.isTextual()) throw JsonFields.wrongType("stop", "a string or an array of strings", stop);
        out.add(s.asText());
      }
    } else {
      throw JsonFields.wrongType("stop", "a string or an array of strings", stop);
    }
    if (out.stream().anyMatch(String::isEmpty)) throw ApiError.invalid("stop strings must not be empty", "stop");
    return List.copyOf(out);
  }

  static List<Prompt> prompts(JsonNode prompt) {
    if (prompt == null) throw ApiError.invalid("you must provide a prompt parameter", "prompt");
    if (prompt.isTextual()) return List.of(new Prompt.Text(prompt.asText()));
    String expected = "a string, an array of strings, an array of token ids or an array of token-id arrays";
    if (!prompt.isArray() || prompt.isEmpty()) {
      if (prompt.isArray()) throw ApiError.invalid("prompt must not be empty", "prompt");
      throw JsonFields.wrongType("prompt", expected, prompt);
    }
    if (prompt.get(0).isIntegralNumber()) return List.of(new Prompt.Tokens(tokenIds(prompt, expected)));
    List<Prompt> out = new ArrayList<>();
    for (JsonNode p : prompt) {
      if (p.isTextual()) out.add(new Prompt.Text(p.asText()));
      else if (p.isArray() && !p.isEmpty()) out.add(new Prompt.Tokens(tokenIds(p, expected)));
      else throw JsonFields.wrongType("prompt", expected, prompt);
    }
    return out;
  }

  private static int[] tokenIds(JsonNode array, String expected) {
    int[] ids = new int[array.size()];
    for (int i = 0; i < ids.length; i++) {
      JsonNode id = array.get(i);
      if (!id.isIntegralNumber() || !id.canConvertToInt()) throw JsonFields.wrongType("prompt", expected, array);
      ids[i] = id.intValue();
    }
    return ids;
  }

  private static void rejectUnsupported(JsonNode root) {
    if (orDefault(bool(root, "echo"), false)) throw ApiError.invalid("echo is not supported", "echo");
    if (get(root, "suffix") != null) throw ApiError.invalid("suffix is not supported", "suffix");
    Integer bestOf = integer(root, "best_of");
    Integer n = integer(root, "n");
    if (bestOf != null && bestOf != (n == null ? 1 : n)) {
      throw ApiError.invalid("best_of other than n is not supported", "best_of");
    }
  }

  /**
   * Parameters that would change the output but are not implemented yet: a 400 naming them, never a 200 that
   * silently ignores them. ({@code response_format} of type {@code text} is the default, so it is accepted.)
   */
  private static void rejectNotImplemented(JsonNode root) {
    for (String name : List.of("tools", "tool_choice", "functions", "function_call")) {
      JsonNode value = get(root, name);
      if (value != null && !value.isNull() && !(value.isContainerNode() && value.isEmpty()))
        throw ApiError.invalid(name + " is not supported by this server yet", name, "unsupported_parameter");
    }
    JsonNode format = get(root, "response_format");
    if (format != null && !format.isNull()) {
      JsonNode type = format.isObject() ? format.get("type") : null;
      if (type == null || !type.isTextual() || !type.asText().equals("text"))
        throw ApiError.invalid("response_format other than {\"type\": \"text\"} is not supported by this server yet",
            "response_format", "unsupported_parameter");
    }
  }

  private static <T> T orDefault(T value, T fallback) {
    return value == null ? fallback : value;
  }
}
