package io.moemesh.e2e;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Tuple;

/**
 * The fuzz test's generators: JSON values as their text (so a body can hold what no JSON library writes: 1e309, -0,
 * integers beyond long, lone surrogate escapes, 3000-deep nesting), request bodies built from them, and malformed
 * bytes and HTTP requests. Every generator shrinks toward short, absent or plain values.
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

  static Arbitrary<String> text() {
    return Arbitraries.frequencyOf(
        Tuple.of(4, Arbitraries.of(HOSTILE_TEXT)),
        Tuple.of(3, Arbitraries.strings().all().ofMaxLength(24)),
        Tuple.of(2, Arbitraries.strings().alpha().numeric().withChars(' ').ofMaxLength(40)),
        Tuple.of(1, Arbitraries.integers().between(1, 40_000).map(n -> "word ".repeat(n / 5 + 1))));
  }

  static Arbitrary<String> string() {
    return text().map(FuzzInputs::quote);
  }

  static Arbitrary<String> number() {
    return Arbitraries.frequencyOf(
        Tuple.of(4, Arbitraries.of(EDGE_NUMBERS)),
        Tuple.of(2, Arbitraries.integers().map(String::valueOf)),
        Tuple.of(2, Arbitraries.doubles().between(-1e6, 1e6).map(String::valueOf)),
        Tuple.of(1, Arbitraries.bigIntegers().between(new java.math.BigInteger("-1" + "0".repeat(40)),
            new java.math.BigInteger("1" + "0".repeat(40))).map(Object::toString)),
        Tuple.of(1, Arbitraries.integers().between(900, 1100).map(n -> "1" + "0".repeat(n)))); // Jackson caps at 1000 digits
  }

  /** Strings that look like numbers, booleans or nothing: the wrong type with a plausible value. */
  static Arbitrary<String> numberLikeString() {
    return Arbitraries.of("\"1\"", "\"0.7\"", "\"NaN\"", "\"Infinity\"", "\"-Infinity\"", "\"1e309\"", "\"true\"", "\"\"",
        "\"null\"", "\" 1\"", "\"0x10\"");
  }

  /** Nested arrays or objects, up to 3000 deep (Jackson refuses more than 1000). */
  static Arbitrary<String> deep() {
    return Arbitraries.integers().between(1, 3000).flatMap(depth -> Arbitraries.of(
        "[".repeat(depth) + "]".repeat(depth),
        "{\"a\":".repeat(depth) + "1" + "}".repeat(depth),
        "[{\"role\":\"user\",\"content\":".repeat(Math.min(depth, 1500)) + "\"x\"" + "}]".repeat(Math.min(depth, 1500))));
  }

  /** Any JSON value, shallow. */
  static Arbitrary<String> anyJson() {
    return Arbitraries.lazyOf(
        () -> Arbitraries.of("null", "true", "false", "{}", "[]", "[null]", "{\"\":null}"),
        FuzzInputs::number,
        FuzzInputs::string,
        FuzzInputs::numberLikeString,
        () -> Arbitraries.lazy(FuzzInputs::scalar).list().ofMaxSize(5).map(FuzzInputs::array),
        () -> Combinators.combine(string(), Arbitraries.lazy(FuzzInputs::scalar)).as((k, v) -> k + ":" + v)
            .list().ofMaxSize(4).map(FuzzInputs::object),
        FuzzInputs::deep);
  }

  private static Arbitrary<String> scalar() {
    return Arbitraries.oneOf(Arbitraries.of("null", "true", "false", "{}", "[]"), number(), string());
  }

  /** A field's value: mostly a (hostile) value of the right type, else any value (wrong types, null, nesting). */
  static Arbitrary<String> value(Arbitrary<String> rightType) {
    return Arbitraries.frequencyOf(Tuple.of(5, rightType), Tuple.of(1, anyJson()));
  }

  static String array(List<String> values) {
    return "[" + String.join(",", values) + "]";
  }

  static String object(List<String> members) {
    return "{" + String.join(",", members.stream().filter(Objects::nonNull).toList()) + "}";
  }

  private static Arbitrary<String> member(String name, Arbitrary<String> value, double absent) {
    return value.map(v -> quote(name) + ":" + v).injectNull(absent);
  }

  // ---- request bodies ----

  /** The sampling and output fields both endpoints take, each absent 75% of the time. */
  private static List<Arbitrary<String>> commonFields() {
    Arbitrary<String> bool = Arbitraries.of("true", "false");
    List<Arbitrary<String>> fields = new ArrayList<>();
    for (String name : List.of("temperature", "top_p", "top_k", "min_p", "n", "max_tokens", "presence_penalty",
        "frequency_penalty", "repetition_penalty", "seed", "best_of")) {
      fields.add(member(name, value(number()), 0.75));
    }
    fields.add(member("stream", value(bool), 0.7));
    fields.add(member("ignore_eos", value(bool), 0.85));
    fields.add(member("stream_options", value(Combinators.combine(member("include_usage", value(bool), 0.3),
        member("extra", anyJson(), 0.8)).as((a, b) -> object(java.util.Arrays.asList(a, b)))), 0.8));
    fields.add(member("stop", value(Arbitraries.oneOf(string(), value(string()).list().ofMaxSize(6).map(FuzzInputs::array))), 0.8));
    fields.add(member("logit_bias", value(Combinators.combine(Arbitraries.oneOf(numberLikeString(), string()), value(number()))
        .as((k, v) -> k + ":" + v).list().ofMaxSize(4).map(FuzzInputs::object)), 0.9));
    fields.add(member("user", value(string()), 0.9));
    fields.add(member("response_format", value(Arbitraries.of("{\"type\":\"text\"}", "{\"type\":\"json_object\"}",
        "{\"type\":null}", "{}", "{\"type\":\"json_schema\",\"json_schema\":{}}")), 0.9));
    for (String name : List.of("tools", "tool_choice", "functions", "function_call", "suffix", "echo")) {
      fields.add(member(name, anyJson(), 0.93));
    }
    fields.add(Combinators.combine(Arbitraries.strings().alpha().ofMinLength(1).ofMaxLength(12), anyJson())
        .as((k, v) -> quote(k) + ":" + v).injectNull(0.8)); // an unknown field
    return fields;
  }

  private static Arbitrary<String> model() {
    return Arbitraries.frequencyOf(Tuple.of(8, Arbitraries.just(quote(MODEL))), Tuple.of(1, string()),
        Tuple.of(1, anyJson()));
  }

  private static Arbitrary<String> contentPart() {
    return Combinators.combine(member("type", value(Arbitraries.of("text", "image_url", "input_audio", "file", "refusal", "")
        .map(FuzzInputs::quote)), 0.1), member("text", value(string()), 0.2), member("image_url", anyJson(), 0.9))
        .as((a, b, c) -> object(java.util.Arrays.asList(a, b, c)));
  }

  private static Arbitrary<String> message() {
    Arbitrary<String> role = Arbitraries.frequencyOf(
        Tuple.of(6, Arbitraries.of("user", "system", "assistant", "developer", "tool").map(FuzzInputs::quote)),
        Tuple.of(1, Arbitraries.of("wizard", "", "USER", "function", " user").map(FuzzInputs::quote)),
        Tuple.of(1, anyJson()));
    Arbitrary<String> content = Arbitraries.frequencyOf(Tuple.of(5, string()),
        Tuple.of(2, contentPart().list().ofMaxSize(4).map(FuzzInputs::array)), Tuple.of(1, anyJson()));
    Arbitrary<String> toolCalls = Arbitraries.oneOf(anyJson(), Combinators.combine(member("id", value(string()), 0.3),
        member("function", value(Combinators.combine(member("name", value(string()), 0.2), member("arguments", value(string()), 0.2))
            .as((n, a) -> object(java.util.Arrays.asList(n, a)))), 0.2)).as((i, f) -> object(java.util.Arrays.asList(i, f)))
        .list().ofMaxSize(3).map(FuzzInputs::array));
    return Combinators.combine(member("role", role, 0.05), member("content", content, 0.1),
        member("tool_calls", toolCalls, 0.9), member("tool_call_id", value(string()), 0.9), member("name", value(string()), 0.9))
        .as((a, b, c, d, e) -> object(java.util.Arrays.asList(a, b, c, d, e)));
  }

  private static Arbitrary<String> messages() {
    return Arbitraries.frequencyOf(
        Tuple.of(8, Arbitraries.frequencyOf(Tuple.of(6, message()), Tuple.of(1, anyJson())).list().ofMaxSize(6).map(FuzzInputs::array)),
        Tuple.of(1, Arbitraries.integers().between(50, 1500).map(n -> array(java.util.Collections.nCopies(n, "{\"role\":\"user\",\"content\":\"hi\"}")))),
        Tuple.of(1, anyJson()));
  }

  /** A chat completion request: structurally right, hostile values. */
  static Arbitrary<String> chatBody() {
    List<Arbitrary<String>> fields = new ArrayList<>(List.of(member("model", model(), 0.05), member("messages", messages(), 0.05),
        member("logprobs", value(Arbitraries.of("true", "false")), 0.8), member("top_logprobs", value(number()), 0.85),
        member("max_completion_tokens", value(number()), 0.9)));
    fields.addAll(commonFields());
    return Combinators.combine(fields).as(FuzzInputs::object);
  }

  /** Token ids: valid, negative, beyond the vocabulary, beyond int and long, fractional, or not numbers at all. */
  private static Arbitrary<String> tokenIds() {
    Arbitrary<String> id = Arbitraries.frequencyOf(Tuple.of(5, Arbitraries.integers().between(0, 300).map(String::valueOf)),
        Tuple.of(2, number()), Tuple.of(1, scalar()));
    return Arbitraries.frequencyOf(Tuple.of(6, id.list().ofMaxSize(8).map(FuzzInputs::array)),
        Tuple.of(1, Arbitraries.integers().between(100, 12_000).map(n -> array(java.util.Collections.nCopies(n, "7")))));
  }

  private static Arbitrary<String> prompt() {
    return Arbitraries.frequencyOf(Tuple.of(4, string()), Tuple.of(3, tokenIds()),
        Tuple.of(2, Arbitraries.oneOf(string(), tokenIds()).list().ofMaxSize(5).map(FuzzInputs::array)),
        Tuple.of(1, Arbitraries.integers().between(65, 3000).map(n -> array(java.util.Collections.nCopies(n, "\"a\"")))),
        Tuple.of(1, anyJson()));
  }

  /** A completion request. */
  static Arbitrary<String> completionBody() {
    List<Arbitrary<String>> fields = new ArrayList<>(List.of(member("model", model(), 0.05), member("prompt", prompt(), 0.05),
        member("logprobs", value(number()), 0.8)));
    fields.addAll(commonFields());
    return Combinators.combine(fields).as(FuzzInputs::object);
  }

  /** A {@code /tokenize} or {@code /detokenize} request: path and body. */
  static Arbitrary<Map.Entry<String, String>> serverRouteBody() {
    Arbitrary<String> tokenize = Combinators.combine(member("model", model(), 0.3), member("prompt", value(string()), 0.2),
        member("messages", messages(), 0.7), member("add_special_tokens", anyJson(), 0.7), member("add_generation_prompt", anyJson(), 0.8))
        .as((a, b, c, d, e) -> object(java.util.Arrays.asList(a, b, c, d, e)));
    Arbitrary<String> detokenize = Combinators.combine(member("model", model(), 0.3), member("tokens", value(tokenIds()), 0.1))
        .as((a, b) -> object(java.util.Arrays.asList(a, b)));
    return Arbitraries.oneOf(tokenize.map(b -> Map.entry("/tokenize", b)), detokenize.map(b -> Map.entry("/detokenize", b)));
  }

  // ---- malformed bytes ----

  static final List<String> POST_PATHS = List.of("/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize");

  private static final String VALID_CHAT = "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"héllo 🦄\"}],\"max_tokens\":3}";
  private static final String VALID_COMPLETION = "{\"model\":\"tiny\",\"prompt\":\"héllo 🦄\",\"max_tokens\":3}";

  /** Bytes that are not one JSON object in UTF-8: truncated, trailing garbage, other text, invalid UTF-8, oversized. */
  static Arbitrary<byte[]> malformedBody() {
    Arbitrary<String> valid = Arbitraries.of(VALID_CHAT, VALID_COMPLETION, "{\"prompt\":\"x\"}", "{\"tokens\":[1,2]}");
    Arbitrary<byte[]> truncated = valid.flatMap(v -> Arbitraries.integers().between(0, utf8(v).length - 1)
        .map(n -> java.util.Arrays.copyOf(utf8(v), n)));
    Arbitrary<byte[]> trailing = Combinators.combine(valid, Arbitraries.of("}", "]", ",", " x", "{}", "\u0000", " {\"a\":1}", "\n[1]", "//c", "/*", "'"))
        .as((v, g) -> utf8(v + g));
    Arbitrary<byte[]> notJson = Arbitraries.oneOf(Arbitraries.of("", " ", "null", "[]", "\"str\"", "42", "true", "<xml/>",
        "model=tiny&prompt=hi", "a=%zz&b=%", "{'model': 'tiny'}", "{model: tiny}", "{\"model\":\"tiny\",}", "[{\"model\":\"tiny\"}]",
        "{\"a\":NaN}", "{\"a\":Infinity}", "{\"a\":01}", "{\"a\":.5}", "{\"a\":1.}", "{\"a\":+1}", "{\"a\":0x10}", "\ufeff{}",
        "{\"a\":\"\\x00\"}", "{\"a\":\"\\ud800\\ud800\"}", "{\"a\" \"b\"}"), Arbitraries.strings().all().ofMaxLength(60))
        .map(FuzzInputs::utf8);
    Arbitrary<byte[]> invalidUtf8 = Combinators.combine(valid, Arbitraries.of(new byte[] {(byte) 0xc3}, new byte[] {(byte) 0xff},
            new byte[] {(byte) 0xfe, (byte) 0xff}, new byte[] {(byte) 0xed, (byte) 0xa0, (byte) 0x80}, new byte[] {(byte) 0xc0, (byte) 0x80},
            new byte[] {(byte) 0xf4, (byte) 0x90, (byte) 0x80, (byte) 0x80}, new byte[] {(byte) 0x80}, new byte[] {0}),
        Arbitraries.integers().between(0, 100)).as((v, bad, at) -> {
          byte[] b = utf8(v);
          int i = Math.min(at, b.length);
          ByteArrayOutputStream out = new ByteArrayOutputStream();
          out.write(b, 0, i);
          out.writeBytes(bad);
          out.write(b, i, b.length - i);
          return out.toByteArray();
        });
    Arbitrary<byte[]> otherEncodings = valid.flatMap(v -> Arbitraries.of(v.getBytes(StandardCharsets.UTF_16),
        v.getBytes(StandardCharsets.UTF_16LE), v.getBytes(StandardCharsets.ISO_8859_1), utf8("\ufeff" + v)));
    Arbitrary<byte[]> oversized = Arbitraries.integers().between(MAX_BODY - 100, 3 * MAX_BODY)
        .map(n -> utf8("{\"model\":\"tiny\",\"prompt\":\"" + "x".repeat(n) + "\"}"));
    Arbitrary<byte[]> random = Arbitraries.bytes().array(byte[].class).ofMaxSize(200);
    return Arbitraries.oneOf(truncated, trailing, notJson, invalidUtf8, otherEncodings, oversized, random);
  }

  static Arbitrary<String> contentType() {
    return Arbitraries.frequencyOf(Tuple.of(4, Arbitraries.just("application/json")), Tuple.of(1, Arbitraries.just((String) null)),
        Tuple.of(2, Arbitraries.of("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=xyz",
            "multipart/form-data", "application/json; charset=utf-16", "application/json; charset=nonsense", ";;;", "*/*",
            "application/octet-stream", "application/json" + "; x=y".repeat(300))));
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  // ---- HTTP level ----

  /** Routes that answer 2xx to a plain GET. */
  static final List<String> GET_ROUTES = List.of("/v1/models", "/v1/models/tiny", "/health", "/version");

  static Arbitrary<String> method() {
    return Arbitraries.frequencyOf(Tuple.of(4, Arbitraries.of("GET", "POST")),
        Tuple.of(2, Arbitraries.of("PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "FOO", "get", "PROPFIND")));
  }

  /** Request targets: the API's paths, unknown ones, odd escapes and query strings, and URIs from 1 to 60 KB. */
  static Arbitrary<String> target() {
    Arbitrary<String> known = Arbitraries.of("/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/models/tiny",
        "/health", "/version", "/tokenize", "/detokenize");
    Arbitrary<String> segment = Arbitraries.frequencyOf(Tuple.of(4, Arbitraries.strings().alpha().numeric().withChars("-._~").ofMaxLength(12)),
        Tuple.of(1, Arbitraries.of("%zz", "%", "%00", "%2F", "%2e%2e", "..", ".", "", "%ff%fe", "%c3%28", "%e2%80%ae", ";x=1",
            "*", "v1", "models", "chat", "completions", "q")));
    Arbitrary<String> unknown = segment.list().ofMinSize(1).ofMaxSize(5).map(s -> "/" + String.join("/", s));
    Arbitrary<String> query = Arbitraries.of("", "?", "?a=1", "?a=%zz", "?stream=true", "?" + "a=b&".repeat(200), "#frag", "?x=%00");
    Arbitrary<String> path = Arbitraries.frequencyOf(Tuple.of(3, known), Tuple.of(3, unknown),
        Tuple.of(1, known.map(k -> "/" + k)), Tuple.of(1, known.map(k -> k + "/")), Tuple.of(1, known.map(k -> k.toUpperCase(java.util.Locale.ROOT))));
    Arbitrary<String> longPath = Combinators.combine(Arbitraries.of("/v1/models/", "/v1/chat/completions?x=", "/", "/health?"),
        Arbitraries.integers().between(1000, 70_000)).as((p, n) -> p + "a".repeat(n)); // Netty's limit: 65536
    return Arbitraries.frequencyOf(Tuple.of(8, Combinators.combine(path, query).as(String::concat)), Tuple.of(1, longPath),
        Tuple.of(1, Arbitraries.of("*", "http://127.0.0.1/v1/models", "v1/models", "//", "/?")));
  }

  private static Arbitrary<String> headerValue() {
    return Arbitraries.frequencyOf(
        Tuple.of(3, Arbitraries.strings().withCharRange(' ', '~').ofMaxLength(60)),
        Tuple.of(1, Arbitraries.strings().withCharRange((char) 0x80, (char) 0xff).ofMaxLength(20)), // obs-text bytes
        Tuple.of(1, Arbitraries.integers().between(100, 9_000).map(n -> "v".repeat(n))),
        Tuple.of(1, Arbitraries.of("", " ", "a b c", "\t", "null", "Bearer", "Bearer ", "Bearer  x", "Basic Zm9vOmJhcg==",
            "bearer sk-x", "Bearer " + "k".repeat(5000))));
  }

  /** Headers that the gateway or Quarkus read, with odd values, and many or large ones (431 past the limit). */
  static Arbitrary<List<Map.Entry<String, String>>> headers() {
    Arbitrary<String> name = Arbitraries.frequencyOf(
        Tuple.of(5, Arbitraries.of("X-Request-Id", "Authorization", "Accept", "Content-Type", "traceparent", "tracestate",
            "baggage", "Expect", "Accept-Encoding", "X-Forwarded-For", "Forwarded", "X-Forwarded-Proto", "Origin",
            "Accept-Charset", "Cookie", "User-Agent", "Range", "If-None-Match", "X-HTTP-Method-Override")),
        Tuple.of(1, Arbitraries.strings().alpha().withChars('-').ofMinLength(1).ofMaxLength(20)));
    Arbitrary<List<Map.Entry<String, String>>> some = Combinators.combine(name, headerValue()).as(Map::entry).list().ofMaxSize(6);
    Arbitrary<List<Map.Entry<String, String>>> many = Combinators.combine(Arbitraries.integers().between(10, 350),
        Arbitraries.integers().between(10, 200)).as((n, size) -> {
          List<Map.Entry<String, String>> out = new ArrayList<>();
          for (int i = 0; i < n; i++) out.add(Map.entry("X-Fuzz-" + i, "h".repeat(size)));
          return out;
        });
    return Arbitraries.frequencyOf(Tuple.of(6, some), Tuple.of(1, many));
  }
}
