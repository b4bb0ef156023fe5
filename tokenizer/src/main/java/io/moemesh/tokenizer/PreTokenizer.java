package io.moemesh.tokenizer;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * DeepSeek-V3's pre-tokenizer: three Hugging Face {@code Split} steps with behaviour {@code Isolated}, applied in
 * turn to every piece the previous step produced, then {@code ByteLevel} without a prefix space and without its own
 * regex. The steps isolate runs of 1-3 digits, runs of CJK ideographs and kana, and finally punctuation-led words,
 * letter runs, punctuation runs and whitespace, much like GPT-4's pattern.
 *
 * <p>The patterns are written once here and serve both sides: {@link #toJson()} puts them into
 * {@code tokenizer.json} for the Hugging Face runtime (Oniguruma), and {@link #split(String)} runs them with
 * {@code java.util.regex} ({@code UNICODE_CHARACTER_CLASS}, so {@code \s} is Unicode white space as in Oniguruma) to
 * give {@link BpeTrainer} the same words the runtime will see.
 */
public final class PreTokenizer {
  /** Runs of one to three digits ("12345" → "123", "45"). */
  public static final String DIGITS = "\\p{N}{1,3}";
  /** Runs of CJK unified ideographs (U+4E00..U+9FA5), hiragana and katakana. */
  public static final String CJK = "[一-龥\u3040-ゟ゠-ヿ]+";
  /** Punctuation-led ASCII words, letter runs, punctuation runs, line breaks and other white space. */
  public static final String WORDS =
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+"
          + "|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
          + "| ?[\\p{P}\\p{S}]+[\r\n]*"
          + "|\\s*[\r\n]+"
          + "|\\s+(?!\\S)"
          + "|\\s+";

  private static final List<Pattern> STEPS =
      List.of(compile(DIGITS), compile(CJK), compile(WORDS));

  private PreTokenizer() {}

  private static Pattern compile(String regex) {
    return Pattern.compile(regex, Pattern.UNICODE_CHARACTER_CLASS);
  }

  /** Splits text into the pieces BPE sees (before the byte-level mapping); their concatenation is the text. */
  public static List<String> split(String text) {
    List<String> pieces = List.of(text);
    for (Pattern step : STEPS) {
      List<String> next = new ArrayList<>(pieces.size() * 2);
      for (String piece : pieces) splitIsolated(step, piece, next);
      pieces = next;
    }
    return pieces;
  }

  private static void splitIsolated(Pattern pattern, String s, List<String> out) {
    Matcher m = pattern.matcher(s);
    int last = 0;
    while (m.find()) {
      if (m.start() > last) out.add(s.substring(last, m.start()));
      if (m.end() > m.start()) out.add(m.group());
      last = m.end();
    }
    if (last < s.length()) out.add(s.substring(last));
  }

  /** The {@code pre_tokenizer} object of {@code tokenizer.json}. */
  public static ObjectNode toJson() {
    JsonNodeFactory f = JsonNodeFactory.instance;
    ObjectNode root = f.objectNode().put("type", "Sequence");
    ArrayNode steps = root.putArray("pretokenizers");
    for (String regex : List.of(DIGITS, CJK, WORDS)) {
      ObjectNode split = steps.addObject().put("type", "Split");
      split.putObject("pattern").put("Regex", regex);
      split.put("behavior", "Isolated").put("invert", false);
    }
    steps.addObject()
        .put("type", "ByteLevel")
        .put("add_prefix_space", false)
        .put("trim_offsets", true)
        .put("use_regex", false);
    return root;
  }
}
