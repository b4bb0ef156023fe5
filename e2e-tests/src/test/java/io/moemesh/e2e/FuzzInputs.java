package io.moemesh.e2e;

import static io.moemesh.e2e.Gen.weight;

import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * The fuzz test's generators: JSON values as their text (so a body can hold what no JSON library writes: 1e309, -0,
 * integers beyond long, lone surrogate escapes, 3000-deep nesting), request bodies built from them, and malformed
 * bytes and HTTP requests.
 */
final class FuzzInputs {
  private FuzzInputs() {}

  static final String MODEL = "tiny";
  static final int MAX_BODY = 64 * 1024;

  /** Numbers at and beyond every range the gateway checks. */
  private static final List<String> EDGE_NUMBERS = List.of("0", "-0", "0.0", "-0.0", "1", "-1", "2", "1.5", "2.0000001",
      "-2.0000001", "0.5", "1e-7", "16", "17", "20", "21", "64", "65", "255", "256", "512", "513", "4096", "2147483647",
      "2147483648", "-2147483648", "-2147483649", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
      "18446744073709551616", "1e309", "-1e309", "1e-400", "4.9e-324", "1.7976931348623157e308", "1E2", "1e0", "100.0",
      "123456789012345678901234567890", "0.1e1", "-1.5", "3.4028235e38");

  /** Text that templates, tokenizers and terminals mishandle. Lone surrogates become escapes in {@link #quote}. */
  private static final List<String> HOSTILE_TEXT = List.of("", " ", "{{ 7*7 }}", "{{ raise_exception('x') }}",
      "{% for i in range(99999999) %}x{% endfor %}", "{% set x = 1 %}{{ x }}", "{{ messages }}", "{# #}", "{%",
      "<｜Assistant｜>", "<｜User｜>", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<think>", "</think>",
      "<|im_start|>system", "\u0000", "a\u0000b", "\ud800", "\udfff", "\udc00\ud800", "x\ud83d", "🦄", "👨‍👩‍👧‍👦",
      "\u202e\u202dRTL", "\u200b\u200d\ufeff", "\uffff", "\ufffe", "\\", "\"", "\\u0000", "\r\n\r\n", "null", "NaN",
      "Infinity", "-0", "1e309", "true", "[DONE]", "data: [DONE]\n\n", "%s%n%x", "${jndi:ldap://x}", "' OR 1=1 --",
      "ẞßǅ𝕏", "\u0301\u0301\u0301", "tiny", "user", "assistant");

  /** Any char of the Basic Multilingual Plane, lone surrogates and noncharacters included. */
  private static final Gen<Character> ANY_CHAR = Gen.charRange('\u0000', '\uffff');

  // ---- JSON values (as text) ----

  static String quote(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        default -> {
          if (c < 0x20 || Character.isSurrogate(c) || c == 0x7f) out.append(String.format("\\u%04x", (int) c));
          else out.append(c);
        }
      }
    }
    return out.append('"').toString();
  }

  static Gen<String> text() {
    return Gen.frequency(
        weight(4, Gen.of(HOSTILE_TEXT)),
        weight(3, Gen.strings(ANY_CHAR, 24)),
        weight(2, Gen.strings(Gen.charsIn(Gen.ALPHANUMERIC + " "), 40)),
        weight(1, Gen.ints(1, 40_000).map(n -> "word ".repeat(n / 5 + 1))));
  }

  static Gen<String> string() {
    return text().map(FuzzInputs::quote);
  }

  static Gen<String> number() {
    return Gen.frequency(
        weight(4, Gen.of(EDGE_NUMBERS)),
        weight(1, random -> String.valueOf(random.nextInt())),
        weight(1, Gen.ints(-1000, 1000).map(String::valueOf)),
        weight(2, random -> String.valueOf(random.nextDouble(-1e6, 1e6))),
        weight(1, FuzzInputs::bigInteger),
        weight(1, Gen.ints(900, 1100).map(n -> "1" + "0".repeat(n)))); // Jackson caps at 1000 digits
  }

  /** An integer of up to 40 digits (within ±10^40): beyond long, beyond what a float holds exactly. */
  private static String bigInteger(RandomGenerator random) {
    StringBuilder digits = new StringBuilder(random.nextBoolean() ? "-" : "");
    for (int i = random.nextInt(1, 41); i > 0; i--) digits.append(random.nextInt(10));
    return new BigInteger(digits.toString()).toString();
  }

  /** Strings that look like numbers, booleans or nothing: the wrong type with a plausible value. */
  static Gen<String> numberLikeString() {
    return Gen.of("\"1\"", "\"0.7\"", "\"NaN\"", "\"Infinity\"", "\"-Infinity\"", "\"1e309\"", "\"true\"", "\"\"",
        "\"null\"", "\" 1\"", "\"0x10\"");
  }

  /** Nested arrays or objects, up to 3000 deep (Jackson refuses more than 1000). */
  static Gen<String> deep() {
    return random -> {
      int depth = random.nextInt(1, 3001), messages = Math.min(depth, 1500);
      return switch (random.nextInt(3)) {
        case 0 -> "[".repeat(depth) + "]".repeat(depth);
        case 1 -> "{\"a\":".repeat(depth) + "1" + "}".repeat(depth);
        default -> "[{\"role\":\"user\",\"content\":".repeat(messages) + "\"x\"" + "}]".repeat(messages);
      };
    };
  }

  /** Any JSON value, shallow. */
  static Gen<String> anyJson() {
    return Gen.oneOf(
        Gen.of("null", "true", "false", "{}", "[]", "[null]", "{\"\":null}"),
        number(),
        string(),
        numberLikeString(),
        scalar().list(5).map(FuzzInputs::array),
        pair(string(), scalar()).list(4).map(FuzzInputs::object),
        deep());
  }

  /** {@code key:value}, an object's member. */
  private static Gen<String> pair(Gen<String> key, Gen<String> value) {
    return random -> key.next(random) + ":" + value.next(random);
  }

  private static Gen<String> scalar() {
    return Gen.oneOf(Gen.of("null", "true", "false", "{}", "[]"), number(), string());
  }

  /** A field's value: mostly a (hostile) value of the right type, else any value (wrong types, null, nesting). */
  static Gen<String> value(Gen<String> rightType) {
    return Gen.frequency(weight(5, rightType), weight(1, anyJson()));
  }

  static String array(List<String> values) {
    return "[" + String.join(",", values) + "]";
  }

  /** An object of the members that are present (not null). */
  static String object(List<String> members) {
    return "{" + String.join(",", members.stream().filter(Objects::nonNull).toList()) + "}";
  }

  /** An object of the generated members, each absent where its generator gives null. */
  @SafeVarargs
  static Gen<String> objectOf(Gen<String>... members) {
    List<Gen<String>> list = new ArrayList<>();
    for (Gen<String> member : members) list.add(member); // not Arrays.asList: javac's varargs lint
    return objectOf(list);
  }

  static Gen<String> objectOf(List<Gen<String>> members) {
    return random -> object(members.stream().map(m -> m.next(random)).toList());
  }

  /** A member of a body ({@code "name":value}) and how often it is absent. */
  private record Field(Gen<String> present, double absent) {
    Gen<String> maybe() {
      return present.orNull(absent);
    }
  }

  private static Field field(String name, Gen<String> value, double absent) {
    return new Field(value.map(v -> quote(name) + ":" + v), absent);
  }

  /** {@code "name":value}, absent (null) with probability {@code absent}. */
  private static Gen<String> member(String name, Gen<String> value, double absent) {
    return field(name, value, absent).maybe();
  }

  // ---- request bodies ----

  /**
   * A request body: mostly every field, each with its own chance of being absent, so that most bodies hold some invalid
   * value and end in a 400; one in four {@code nearValid}, so that hostile text in a valid structure also reaches the
   * templates, the tokenizer, the model lookup and the decode stub.
   */
  private static Gen<String> body(List<Field> fields, Gen<String> nearValid) {
    return Gen.frequency(weight(3, objectOf(fields.stream().map(Field::maybe).toList())), weight(1, nearValid));
  }

  /** One of the fields, present, half the time. */
  private static Gen<String> maybeOneOf(List<Field> fields) {
    return Gen.of(fields).flatMap(Field::present).orNull(0.5);
  }

  /** Mostly this gateway's model; else another name (404). */
  private static Gen<String> plainModel() {
    return Gen.frequency(weight(9, Gen.just(quote(MODEL))), weight(1, string()));
  }

  /** The sampling and output fields both endpoints take, each absent 70% of the time or more. */
  private static List<Field> commonFields() {
    Gen<String> bool = Gen.of("true", "false");
    List<Field> fields = new ArrayList<>();
    for (String name : List.of("temperature", "top_p", "top_k", "min_p", "n", "max_tokens", "presence_penalty",
        "frequency_penalty", "repetition_penalty", "seed", "best_of")) {
      fields.add(field(name, value(number()), 0.75));
    }
    fields.add(field("stream", value(bool), 0.7));
    fields.add(field("ignore_eos", value(bool), 0.85));
    fields.add(field("stream_options", value(objectOf(member("include_usage", value(bool), 0.3), member("extra", anyJson(), 0.8))), 0.8));
    fields.add(field("stop", value(Gen.oneOf(string(), value(string()).list(6).map(FuzzInputs::array))), 0.8));
    Gen<String> bias = pair(Gen.oneOf(numberLikeString(), string()), value(number())).list(4).map(FuzzInputs::object);
    fields.add(field("logit_bias", value(bias), 0.9));
    fields.add(field("user", value(string()), 0.9));
    fields.add(field("response_format", value(Gen.of("{\"type\":\"text\"}", "{\"type\":\"json_object\"}",
        "{\"type\":null}", "{}", "{\"type\":\"json_schema\",\"json_schema\":{}}")), 0.9));
    for (String name : List.of("tools", "tool_choice", "functions", "function_call", "suffix", "echo")) {
      fields.add(field(name, anyJson(), 0.93));
    }
    fields.add(new Field(pair(Gen.strings(Gen.charsIn(Gen.ALPHA), 1, 12).map(FuzzInputs::quote), anyJson()), 0.8)); // an unknown one
    return fields;
  }

  private static Gen<String> model() {
    return Gen.frequency(weight(8, Gen.just(quote(MODEL))), weight(1, string()), weight(1, anyJson()));
  }

  private static Gen<String> contentPart() {
    Gen<String> type = Gen.of("text", "image_url", "input_audio", "file", "refusal", "").map(FuzzInputs::quote);
    return objectOf(member("type", value(type), 0.1), member("text", value(string()), 0.2), member("image_url", anyJson(), 0.9));
  }

  private static Gen<String> message() {
    Gen<String> role = Gen.frequency(
        weight(6, Gen.of("user", "system", "assistant", "developer", "tool").map(FuzzInputs::quote)),
        weight(1, Gen.of("wizard", "", "USER", "function", " user").map(FuzzInputs::quote)),
        weight(1, anyJson()));
    Gen<String> content = Gen.frequency(weight(5, string()), weight(2, contentPart().list(4).map(FuzzInputs::array)),
        weight(1, anyJson()));
    Gen<String> function = objectOf(member("name", value(string()), 0.2), member("arguments", value(string()), 0.2));
    Gen<String> toolCall = objectOf(member("id", value(string()), 0.3), member("function", value(function), 0.2));
    Gen<String> toolCalls = Gen.oneOf(anyJson(), toolCall.list(3).map(FuzzInputs::array));
    return objectOf(member("role", role, 0.05), member("content", content, 0.1), member("tool_calls", toolCalls, 0.9),
        member("tool_call_id", value(string()), 0.9), member("name", value(string()), 0.9));
  }

  private static Gen<String> messages() {
    return Gen.frequency(
        weight(8, Gen.frequency(weight(6, message()), weight(1, anyJson())).list(6).map(FuzzInputs::array)),
        weight(1, Gen.ints(50, 1500).map(n -> array(Collections.nCopies(n, "{\"role\":\"user\",\"content\":\"hi\"}")))),
        weight(1, anyJson()));
  }

  /** A chat completion request: structurally right, hostile values. */
  static Gen<String> chatBody() {
    List<Field> optional = new ArrayList<>(List.of(field("logprobs", value(Gen.of("true", "false")), 0.8),
        field("top_logprobs", value(number()), 0.85), field("max_completion_tokens", value(number()), 0.9)));
    optional.addAll(commonFields());
    List<Field> fields = new ArrayList<>(List.of(field("model", model(), 0.05), field("messages", messages(), 0.05)));
    fields.addAll(optional);
    Gen<String> plainMessage = objectOf(member("role", Gen.of("system", "user", "assistant").map(FuzzInputs::quote), 0),
        member("content", string(), 0));
    return body(fields, objectOf(member("model", plainModel(), 0), member("messages", plainMessage.list(1, 4).map(FuzzInputs::array), 0),
        maybeOneOf(optional)));
  }

  /** Token ids: valid, negative, beyond the vocabulary, beyond int and long, fractional, or not numbers at all. */
  private static Gen<String> tokenIds() {
    Gen<String> id = Gen.frequency(weight(5, Gen.ints(0, 300).map(String::valueOf)), weight(2, number()), weight(1, scalar()));
    return Gen.frequency(weight(6, id.list(8).map(FuzzInputs::array)),
        weight(1, Gen.ints(100, 12_000).map(n -> array(Collections.nCopies(n, "7")))));
  }

  private static Gen<String> prompt() {
    return Gen.frequency(weight(4, string()), weight(3, tokenIds()),
        weight(2, Gen.oneOf(string(), tokenIds()).list(5).map(FuzzInputs::array)),
        weight(1, Gen.ints(65, 3000).map(n -> array(Collections.nCopies(n, "\"a\"")))),
        weight(1, anyJson()));
  }

  /** A completion request. */
  static Gen<String> completionBody() {
    List<Field> optional = new ArrayList<>(List.of(field("logprobs", value(number()), 0.8)));
    optional.addAll(commonFields());
    List<Field> fields = new ArrayList<>(List.of(field("model", model(), 0.05), field("prompt", prompt(), 0.05)));
    fields.addAll(optional);
    Gen<String> plainPrompt = Gen.oneOf(string(), Gen.ints(0, 300).map(String::valueOf).list(1, 8).map(FuzzInputs::array));
    return body(fields, objectOf(member("model", plainModel(), 0), member("prompt", plainPrompt, 0), maybeOneOf(optional)));
  }

  /** A {@code /tokenize} or {@code /detokenize} request: path and body. */
  static Gen<Map.Entry<String, String>> serverRouteBody() {
    Gen<String> tokenize = objectOf(member("model", model(), 0.3), member("prompt", value(string()), 0.2),
        member("messages", messages(), 0.7), member("add_special_tokens", anyJson(), 0.7), member("add_generation_prompt", anyJson(), 0.8));
    Gen<String> detokenize = objectOf(member("model", model(), 0.3), member("tokens", value(tokenIds()), 0.1));
    return Gen.oneOf(tokenize.map(b -> Map.entry("/tokenize", b)), detokenize.map(b -> Map.entry("/detokenize", b)));
  }

  // ---- malformed bytes ----

  static final List<String> POST_PATHS = List.of("/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize");

  private static final String VALID_CHAT = "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"héllo 🦄\"}],\"max_tokens\":3}";
  private static final String VALID_COMPLETION = "{\"model\":\"tiny\",\"prompt\":\"héllo 🦄\",\"max_tokens\":3}";

  /** Bytes that break UTF-8 where they are put: a cut sequence, never-valid bytes, a surrogate, overlong, beyond U+10FFFF. */
  private static final List<byte[]> BAD_UTF8 = List.of(new byte[] {(byte) 0xc3}, new byte[] {(byte) 0xff},
      new byte[] {(byte) 0xfe, (byte) 0xff}, new byte[] {(byte) 0xed, (byte) 0xa0, (byte) 0x80}, new byte[] {(byte) 0xc0, (byte) 0x80},
      new byte[] {(byte) 0xf4, (byte) 0x90, (byte) 0x80, (byte) 0x80}, new byte[] {(byte) 0x80}, new byte[] {0});

  /** Bytes that are not one JSON object in UTF-8: truncated, trailing garbage, other text, invalid UTF-8, oversized. */
  static Gen<byte[]> malformedBody() {
    Gen<String> valid = Gen.of(VALID_CHAT, VALID_COMPLETION, "{\"prompt\":\"x\"}", "{\"tokens\":[1,2]}");
    Gen<byte[]> truncated = valid.map(FuzzInputs::utf8).flatMap(v -> Gen.ints(0, v.length - 1).map(n -> Arrays.copyOf(v, n)));
    Gen<String> garbage = Gen.of("}", "]", ",", " x", "{}", "\u0000", " {\"a\":1}", "\n[1]", "//c", "/*", "'");
    Gen<byte[]> trailing = random -> utf8(valid.next(random) + garbage.next(random));
    Gen<byte[]> notJson = Gen.oneOf(Gen.of("", " ", "null", "[]", "\"str\"", "42", "true", "<xml/>",
        "model=tiny&prompt=hi", "a=%zz&b=%", "{'model': 'tiny'}", "{model: tiny}", "{\"model\":\"tiny\",}", "[{\"model\":\"tiny\"}]",
        "{\"a\":NaN}", "{\"a\":Infinity}", "{\"a\":01}", "{\"a\":.5}", "{\"a\":1.}", "{\"a\":+1}", "{\"a\":0x10}", "\ufeff{}",
        "{\"a\":\"\\x00\"}", "{\"a\":\"\\ud800\\ud800\"}", "{\"a\" \"b\"}"), Gen.strings(ANY_CHAR, 60))
        .map(FuzzInputs::utf8);
    Gen<byte[]> invalidUtf8 = random -> {
      byte[] b = utf8(valid.next(random));
      byte[] bad = Gen.of(BAD_UTF8).next(random);
      int at = Math.min(random.nextInt(0, 101), b.length);
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      out.write(b, 0, at);
      out.writeBytes(bad);
      out.write(b, at, b.length - at);
      return out.toByteArray();
    };
    Gen<byte[]> otherEncodings = valid.flatMap(v -> Gen.of(v.getBytes(StandardCharsets.UTF_16),
        v.getBytes(StandardCharsets.UTF_16LE), v.getBytes(StandardCharsets.ISO_8859_1), utf8("\ufeff" + v)));
    Gen<byte[]> oversized = Gen.ints(MAX_BODY - 100, 3 * MAX_BODY)
        .map(n -> utf8("{\"model\":\"tiny\",\"prompt\":\"" + "x".repeat(n) + "\"}"));
    Gen<byte[]> randomBytes = random -> {
      byte[] b = new byte[random.nextInt(201)];
      random.nextBytes(b);
      return b;
    };
    return Gen.oneOf(truncated, trailing, notJson, invalidUtf8, otherEncodings, oversized, randomBytes);
  }

  static Gen<String> contentType() {
    return Gen.frequency(weight(4, Gen.just("application/json")), weight(1, Gen.just((String) null)),
        weight(2, Gen.of("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=xyz",
            "multipart/form-data", "application/json; charset=utf-16", "application/json; charset=nonsense", ";;;", "*/*",
            "application/octet-stream", "application/json" + "; x=y".repeat(300))));
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  // ---- HTTP level ----

  /** Routes that answer 2xx to a plain GET. */
  static final List<String> GET_ROUTES = List.of("/v1/models", "/v1/models/tiny", "/health", "/version");

  static Gen<String> method() {
    return Gen.frequency(weight(4, Gen.of("GET", "POST")),
        weight(2, Gen.of("PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "FOO", "get", "PROPFIND")));
  }

  /** Request targets: the API's paths, unknown ones, odd escapes and query strings, and URIs from 1 to 70 KB. */
  static Gen<String> target() {
    Gen<String> known = Gen.of("/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/models/tiny",
        "/health", "/version", "/tokenize", "/detokenize");
    Gen<String> segment = Gen.frequency(weight(4, Gen.strings(Gen.charsIn(Gen.ALPHANUMERIC + "-._~"), 12)),
        weight(1, Gen.of("%zz", "%", "%00", "%2F", "%2e%2e", "..", ".", "", "%ff%fe", "%c3%28", "%e2%80%ae", ";x=1",
            "*", "v1", "models", "chat", "completions", "q")));
    Gen<String> unknown = segment.list(1, 5).map(s -> "/" + String.join("/", s));
    Gen<String> query = Gen.of("", "?", "?a=1", "?a=%zz", "?stream=true", "?" + "a=b&".repeat(200), "#frag", "?x=%00");
    Gen<String> path = Gen.frequency(weight(3, known), weight(3, unknown),
        weight(1, known.map(k -> "/" + k)), weight(1, known.map(k -> k + "/")), weight(1, known.map(k -> k.toUpperCase(Locale.ROOT))));
    Gen<String> longPathPrefix = Gen.of("/v1/models/", "/v1/chat/completions?x=", "/", "/health?");
    Gen<String> longPath = random -> longPathPrefix.next(random) + "a".repeat(random.nextInt(1000, 70_001)); // Netty's limit: 65536
    return Gen.frequency(weight(8, random -> path.next(random) + query.next(random)), weight(1, longPath),
        weight(1, Gen.of("*", "http://127.0.0.1/v1/models", "v1/models", "//", "/?")));
  }

  private static Gen<String> headerValue() {
    return Gen.frequency(
        weight(3, Gen.strings(Gen.charRange(' ', '~'), 60)),
        weight(1, Gen.strings(Gen.charRange('\u0080', '\u00ff'), 20)), // obs-text bytes
        weight(1, Gen.ints(100, 9_000).map(n -> "v".repeat(n))),
        weight(1, Gen.of("", " ", "a b c", "\t", "null", "Bearer", "Bearer ", "Bearer  x", "Basic Zm9vOmJhcg==",
            "bearer sk-x", "Bearer " + "k".repeat(5000))));
  }

  /** Headers that the gateway or Quarkus read, with odd values, and many or large ones (431 past the limit). */
  static Gen<List<Map.Entry<String, String>>> headers() {
    Gen<String> name = Gen.frequency(
        weight(5, Gen.of("X-Request-Id", "Authorization", "Accept", "Content-Type", "traceparent", "tracestate",
            "baggage", "Expect", "Accept-Encoding", "X-Forwarded-For", "Forwarded", "X-Forwarded-Proto", "Origin",
            "Accept-Charset", "Cookie", "User-Agent", "Range", "If-None-Match", "X-HTTP-Method-Override")),
        weight(1, Gen.strings(Gen.charsIn(Gen.ALPHA + "-"), 1, 20)));
    Gen<String> value = headerValue();
    Gen<Map.Entry<String, String>> header = random -> Map.entry(name.next(random), value.next(random));
    Gen<List<Map.Entry<String, String>>> many = random -> {
      int n = random.nextInt(10, 351), size = random.nextInt(10, 201);
      List<Map.Entry<String, String>> out = new ArrayList<>();
      for (int i = 0; i < n; i++) out.add(Map.entry("X-Fuzz-" + i, "h".repeat(size)));
      return out;
    };
    return Gen.frequency(weight(6, header.list(6)), weight(1, many));
  }
}
