package io.moemesh.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.ForwardBatch;
import io.moemesh.model.LatentKvCache;
import io.moemesh.tokenizer.ChatEncoder;
import io.moemesh.tokenizer.ChatMessage;
import io.moemesh.tokenizer.Tokenizer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Whether the model does what a chat turn asks, judged on held-out turns with a known right answer
 * ({@code heldout-chat.jsonl} beside the demo model, written by {@code tools/train-demo/corpus.py}): a story request
 * is followed when the greedy answer's first sentence names the asked-for animal; a question about the world is
 * answered when the greedy answer contains the fact (the animal's colour, home or food).
 */
final class ChatAccuracy {
  static final String FILE = "heldout-chat.jsonl";
  private static final int MAX_NEW_TOKENS = 40, PAGE_SIZE = 64;
  private static final Pattern SENTENCE_END = Pattern.compile("[.!?]");

  enum Task {
    STORY, COLOR, HOME, FOOD;

    /** Whether {@code answer} meets a turn of this task whose right answer contains {@code expect}. */
    boolean judge(String answer, String expect) {
      String judged = this == STORY ? firstSentence(answer) : answer;
      return Pattern.compile("\\b" + Pattern.quote(expect) + "\\b", Pattern.CASE_INSENSITIVE).matcher(judged).find();
    }
  }

  record Turn(String user, Task task, String expect) {}

  /** Per task: turns answered right, and turns asked. */
  record Score(Map<Task, int[]> byTask) {
    double rate(Task task) {
      int[] s = byTask.get(task);
      return s == null || s[1] == 0 ? Double.NaN : (double) s[0] / s[1];
    }

    int asked(Task task) {
      int[] s = byTask.get(task);
      return s == null ? 0 : s[1];
    }

    /** Right answers over every fact question (colour, home, food). */
    double factRate() {
      int right = 0, asked = 0;
      for (Task t : List.of(Task.COLOR, Task.HOME, Task.FOOD)) {
        int[] s = byTask.getOrDefault(t, new int[2]);
        right += s[0];
        asked += s[1];
      }
      return asked == 0 ? Double.NaN : (double) right / asked;
    }

    int factsAsked() {
      return asked(Task.COLOR) + asked(Task.HOME) + asked(Task.FOOD);
    }
  }

  private ChatAccuracy() {}

  /** The held-out turns beside the model, or none when it has no such file (the random-weight models). */
  static List<Turn> turns(Path modelDir) {
    Path file = modelDir.resolve(FILE);
    if (!Files.isRegularFile(file)) return List.of();
    var json = new ObjectMapper();
    List<Turn> out = new ArrayList<>();
    try {
      for (String line : Files.readAllLines(file)) {
        if (line.isBlank()) continue;
        var node = json.readTree(line);
        String user = node.path("user").asText(null), task = node.path("task").asText(null), expect = node.path("expect").asText(null);
        if (user == null || task == null || expect == null || expect.isBlank())
          throw new IllegalArgumentException(file + ": every line needs user, task and expect: " + line);
        out.add(new Turn(user, task(task, file), expect));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file, e);
    }
    return out;
  }

  private static Task task(String name, Path file) {
    try {
      return Task.valueOf(name.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(file + ": task '" + name + "' is not one of " + List.of(Task.values()), e);
    }
  }

  /** Every turn answered greedily (rendered by the chat template, as the gateway does) and judged. */
  static Score score(DeepseekModel model, Tokenizer tokenizer, List<Turn> turns) {
    var template = tokenizer.chatTemplate().orElseThrow(() -> new IllegalArgumentException("the model has no chat template"));
    Map<Task, int[]> byTask = new EnumMap<>(Task.class);
    try (TensorArena scratch = TensorArena.workspace()) {
      for (Turn turn : turns) {
        int[] prompt = ChatEncoder.encode(tokenizer, template, List.of(ChatMessage.user(turn.user())), true, ChatEncoder.SpecialTokens.TEXT);
        String answer = answer(model, tokenizer, prompt, turn.task() == Task.STORY, scratch);
        int[] s = byTask.computeIfAbsent(turn.task(), t -> new int[2]);
        if (turn.task().judge(answer, turn.expect())) s[0]++;
        s[1]++;
      }
    }
    return new Score(byTask);
  }

  /**
   * The greedy answer to {@code prompt}: up to {@link #MAX_NEW_TOKENS} tokens, ending at EOS or, with
   * {@code oneSentence}, once the text holds a sentence end.
   */
  static String answer(DeepseekModel model, Tokenizer tokenizer, int[] prompt, boolean oneSentence, TensorArena scratch) {
    int[] table = new int[(prompt.length + MAX_NEW_TOKENS + PAGE_SIZE - 1) / PAGE_SIZE];
    for (int i = 0; i < table.length; i++) table[i] = i;
    List<Integer> out = new ArrayList<>();
    String text = "";
    try (TensorArena cacheArena = TensorArena.open()) {
      scratch.reset();
      LatentKvCache cache = model.newCache(cacheArena, table.length, PAGE_SIZE);
      float[] logits = model.forward(ForwardBatch.single(prompt, 0, prompt.length, table, false), cache, scratch).logits().toFloatArray();
      for (int step = 0; step < MAX_NEW_TOKENS; step++) {
        int token = QualityBench.argmax(logits);
        if (model.config().isEos(token)) break;
        out.add(token);
        text = tokenizer.decode(out.stream().mapToInt(Integer::intValue).toArray(), true);
        if (oneSentence && SENTENCE_END.matcher(text).find()) break;
        scratch.reset();
        logits = model.forward(ForwardBatch.single(new int[] {token}, prompt.length + step, prompt.length, table, false), cache, scratch)
            .logits().toFloatArray();
      }
    }
    return text;
  }

  /** The text up to and including the first sentence end (., ! or ?), or all of it. */
  static String firstSentence(String text) {
    var m = SENTENCE_END.matcher(text);
    return m.find() ? text.substring(0, m.end()) : text;
  }
}
