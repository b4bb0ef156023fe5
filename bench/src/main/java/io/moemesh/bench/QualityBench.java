package io.moemesh.bench;

import io.moemesh.cli.Cli;
import io.moemesh.cli.DemoModels;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.ForwardBatch;
import io.moemesh.model.LatentKvCache;
import io.moemesh.model.Precision;
import io.moemesh.tokenizer.Tokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.IntStream;

/**
 * {@code bench quality}: what each precision keeps of the model, on held-out text. Per precision: perplexity over
 * the text's documents (each opened with BOS, every later token scored), top-1 agreement of its next-token argmax
 * with {@code exact}'s, and the MTP head's acceptance: how often its draft for position t+2 (from the hidden state
 * at t and the token at t+1) equals the main model's own greedy choice there — the rate at which greedy MTP
 * speculation accepts its first draft, teacher-forced on the text; also with the draft head over the first quarter of
 * the token ids only (FR-Spec's draft vocabulary: {@code moemesh.engine.speculative-draft-vocabulary}). A model with held-out chat turns beside it (the demo:
 * {@link ChatAccuracy}) is also asked them: how often a story answers the asked-for animal and a question the world's fact.
 */
public final class QualityBench {
  private QualityBench() {}

  /** {@code dir} null: the trained demo model; {@code text} null: its heldout.txt; {@code json} null: no JSON. */
  record Settings(Path dir, Path text, List<Precision> precisions, int window, int maxTokens, Path json) {
    /** The settings {@code bench quality ARGS} runs with; a usage error is a picocli {@code ParameterException}. */
    static Settings parse(String... args) {
      return Cli.parse(new QualityBenchCommand(), args).settings();
    }
  }

  /** One precision's pass over the windows: per scored position, the argmax and the log-probability of the truth. */
  record Pass(Precision precision, int[] argmax, double nll, int scored, int mtpAccepted, int mtpAcceptedInDraftVocabulary, int mtpDrafts,
      ChatAccuracy.Score chat) {
    double perplexity() {
      return Math.exp(nll / scored);
    }
  }

  static void benchmark(Settings s) throws Exception {
    Path dir = s.dir() != null ? s.dir() : DemoModels.ensure(DemoModels.DEFAULT);
    Path textFile = s.text() != null ? s.text() : dir.resolve("heldout.txt");
    if (!Files.isRegularFile(textFile)) throw new IOException("no held-out text at " + textFile + ": pass --text FILE");
    List<int[]> windows = windows(dir, Files.readString(textFile), s.window(), s.maxTokens());
    var progress = new Progress();
    progress.log("%d windows of up to %d tokens from %s", windows.size(), s.window(), textFile);
    List<ChatAccuracy.Turn> turns = ChatAccuracy.turns(dir);
    if (!turns.isEmpty()) progress.log("%d held-out chat turns from %s", turns.size(), dir.resolve(ChatAccuracy.FILE));
    List<Pass> passes = new ArrayList<>();
    try (var kernels = NativeKernels.create(2); Tokenizer tokenizer = Tokenizer.load(dir)) {
      for (Precision precision : s.precisions()) {
        try (DeepseekModel model = DeepseekModel.load(dir, precision, kernels, DemoModels.progress("loading"))) {
          Pass pass = pass(model, windows, turns.isEmpty() ? null : ChatAccuracy.score(model, tokenizer, turns));
          passes.add(pass);
          progress.log("%s: perplexity %.4f over %d tokens%s", name(precision), pass.perplexity(), pass.scored(),
              pass.mtpDrafts() == 0 ? "" : String.format(Locale.ROOT, ", MTP acceptance %.3f", (double) pass.mtpAccepted() / pass.mtpDrafts()));
        }
      }
    }
    List<Measurement> results = measurements(dir, passes);
    System.out.println(Report.machine());
    for (Measurement m : results)
      System.out.printf(Locale.ROOT, "%-20s %8.4f %-4s %-9s %s (%s)%n", m.name(), m.value(), m.unit(),
          m.ratio() == null ? "" : String.format(Locale.ROOT, "x%.4f", m.ratio()), m.shape(), m.stat());
    if (s.json() != null) Report.writeJson(s.json(), results);
  }

  static List<Measurement> measurements(Path dir, List<Pass> passes) {
    Pass exact = passes.stream().filter(p -> p.precision() == Precision.EXACT).findFirst().orElse(null);
    String shape = dir.getFileName().toString();
    List<Measurement> out = new ArrayList<>();
    for (Pass p : passes) {
      String what = shape + " " + name(p.precision());
      out.add(new Measurement("perplexity", what + ", " + p.scored() + " tokens", 0, p.perplexity(), "ppl",
          exact == null ? null : p.perplexity() / exact.perplexity(), exact == null ? null : "exact", "held-out"));
      if (exact != null && p != exact)
        out.add(new Measurement("top1_agreement", what + " vs exact", 0, agreement(p.argmax(), exact.argmax()), "", null, null, "held-out"));
      if (p.mtpDrafts() > 0)
        out.add(new Measurement("mtp_acceptance", what + ", first draft, greedy", 0, (double) p.mtpAccepted() / p.mtpDrafts(), "", null,
            null, p.mtpDrafts() + " drafts"));
      if (p.mtpDrafts() > 0)
        out.add(new Measurement("mtp_acceptance", what + ", first draft, greedy, over the first quarter of the ids", 0,
            (double) p.mtpAcceptedInDraftVocabulary() / p.mtpDrafts(), "", null, null, p.mtpDrafts() + " drafts"));
      if (p.chat() != null) {
        out.add(new Measurement("chat_follows_request", what + ", story about the asked animal", 0,
            p.chat().rate(ChatAccuracy.Task.STORY), "", null, null, p.chat().asked(ChatAccuracy.Task.STORY) + " requests"));
        out.add(new Measurement("chat_fact_accuracy", what + ", colour/home/food answered", 0, p.chat().factRate(), "", null, null,
            p.chat().factsAsked() + " questions"));
      }
    }
    return out;
  }

  /**
   * The text's documents (separated by blank lines) as windows of at most {@code window} tokens, each opened with BOS,
   * as the demo model was trained (documents packed with BOS between them); at most {@code maxTokens} scored.
   */
  static List<int[]> windows(Path dir, String text, int window, int maxTokens) {
    try (Tokenizer tokenizer = Tokenizer.load(dir)) {
      List<int[]> out = new ArrayList<>();
      int scored = 0;
      for (String document : text.split("\\n\\s*\\n")) {
        if (scored >= maxTokens) break;
        int[] ids = tokenizer.encode(document.strip(), false);
        for (int at = 0; at < ids.length && scored < maxTokens; at += window - 1) {
          int[] w = new int[1 + Math.min(window - 1, ids.length - at)];
          w[0] = tokenizer.bosId();
          System.arraycopy(ids, at, w, 1, w.length - 1);
          out.add(w);
          scored += w.length - 1;
        }
      }
      if (out.isEmpty()) throw new IllegalArgumentException("the held-out text has no document of at least 1 token");
      return out;
    }
  }

  /** Every window once through the main model (all rows' logits) and, if the model has one, its MTP module. */
  static Pass pass(DeepseekModel model, List<int[]> windows, ChatAccuracy.Score chat) {
    int pageSize = 64;
    List<Integer> argmax = new ArrayList<>();
    double nll = 0;
    int scored = 0, accepted = 0, acceptedInDraftVocabulary = 0, drafts = 0, draftVocabulary = draftVocabulary(model);
    for (int[] w : windows) {
      int t = w.length - 1; // rows 0..t-1 predict w[1..t]
      int[] table = IntStream.range(0, (t + pageSize - 1) / pageSize).toArray();
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, table.length, pageSize);
        var out = model.forward(ForwardBatch.single(Arrays.copyOf(w, t), 0, t, table, true), cache, arena);
        float[][] logits = rows(out.logits());
        int[] main = new int[t];
        for (int r = 0; r < t; r++) {
          main[r] = argmax(logits[r]);
          argmax.add(main[r]);
          nll -= logSoftmax(logits[r], w[r + 1]);
        }
        scored += t;
        if (model.numMtpLayers() > 0 && t >= 2) {
          var draftBatch = ForwardBatch.single(Arrays.copyOfRange(w, 1, t + 1), 0, t, table, true);
          float[][] draft = rows(model.forwardMtp(0, draftBatch, out.hidden(), cache, arena));
          for (int r = 0; r + 1 < t; r++, drafts++) { // the draft for r+2 against the judge's choice there
            if (argmax(draft[r]) == main[r + 1]) accepted++;
            if (argmax(Arrays.copyOf(draft[r], draftVocabulary)) == main[r + 1]) acceptedInDraftVocabulary++;
          }
        }
      }
    }
    return new Pass(model.precision(), argmax.stream().mapToInt(Integer::intValue).toArray(), nll, scored, accepted, acceptedInDraftVocabulary,
        drafts, chat);
  }

  /** The draft vocabulary the acceptance is also measured with: the first quarter of the ids (FR-Spec's share). */
  static int draftVocabulary(DeepseekModel model) {
    return model.config().vocabSize() / 4;
  }

  static double agreement(int[] a, int[] b) {
    int same = 0;
    for (int i = 0; i < a.length; i++) if (a[i] == b[i]) same++;
    return (double) same / a.length;
  }

  /** log softmax(row)[target], in double. */
  static double logSoftmax(float[] row, int target) {
    double max = Double.NEGATIVE_INFINITY;
    for (float v : row) max = Math.max(max, v);
    double sum = 0;
    for (float v : row) sum += Math.exp(v - max);
    return row[target] - max - Math.log(sum);
  }

  static int argmax(float[] row) {
    int best = 0;
    for (int i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
    return best;
  }

  private static float[][] rows(Tensor t) {
    float[] all = t.toFloatArray();
    int n = t.dim(0), m = t.dim(1);
    float[][] out = new float[n][];
    for (int i = 0; i < n; i++) out[i] = Arrays.copyOfRange(all, i * m, (i + 1) * m);
    return out;
  }

  private static String name(Precision p) {
    return p.name().toLowerCase(Locale.ROOT);
  }
}
