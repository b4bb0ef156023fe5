package io.moemesh.engine.cli;

import io.moemesh.engine.DeepseekRunner;
import io.moemesh.engine.Engine;
import io.moemesh.engine.EngineStats;
import io.moemesh.engine.GenerationRequest;
import io.moemesh.engine.KvCacheConfig;
import io.moemesh.engine.KvConnector;
import io.moemesh.engine.RequestOutput;
import io.moemesh.engine.RequestStream;
import io.moemesh.engine.SchedulerConfig;
import io.moemesh.engine.SpecDecodeStats;
import io.moemesh.kernels.KernelBackend;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.ForwardBatch;
import io.moemesh.model.LatentKvCache;
import io.moemesh.model.Precision;
import io.moemesh.model.sampling.Sampler;
import io.moemesh.model.sampling.SamplingParams;
import io.moemesh.model.sampling.TokenCounts;
import io.moemesh.model.tokenizer.ChatEncoder;
import io.moemesh.model.tokenizer.ChatMessage;
import io.moemesh.model.tokenizer.IncrementalDetokenizer;
import io.moemesh.model.tokenizer.Tokenizer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * {@code generate}: one prompt through the model in this process — a prefill pass, then one decode step per
 * token through the paged KV cache — printing the ids and streaming the text. {@code --logits-out} writes
 * the logits after every fed token: the prompt rows of the prefill pass, then one row per decode step.
 * {@code --speculative-tokens k} (k &gt; 0) runs the prompt through the {@link Engine} instead, with MTP speculative
 * decoding of k drafts per step, and prints the drafts' acceptance.
 */
final class GenerateCommand {
  static final String USAGE = "generate [--model DIR] (--prompt TEXT | --chat TEXT | --prompt-ids 1,2,3) --max-new-tokens N\n"
      + "           [--precision exact|bf16|int8] [--temperature T] [--top-p P] [--top-k K] [--seed S]\n"
      + "           [--logits-out FILE.npy] [--kernels native|reference] [--threads N] [--ignore-eos] [--speculative-tokens K]";
  private static final int PAGE_SIZE = 16;

  private GenerateCommand() {}

  static void run(List<String> argv) throws Exception {
    var args = new CliArgs("generate", argv,
        Set.of("model", "prompt", "chat", "prompt-ids", "max-new-tokens", "precision", "temperature", "top-p", "top-k",
            "seed", "logits-out", "kernels", "threads", "speculative-tokens"),
        Set.of("ignore-eos"));
    Path given = args.string("model").map(Path::of).orElse(null);
    Path dir = given != null ? given : DemoModels.ensure(DemoModels.DEFAULT);
    String input = args.oneOf("prompt", "chat", "prompt-ids")
        .orElseThrow(() -> new UsageException("generate: give one of --prompt, --chat or --prompt-ids"));
    int maxNew = args.integer("max-new-tokens", 16, 0, 1 << 20);
    Precision precision = parse(() -> Precision.parse(args.string("precision").orElse("int8")));
    KernelBackend backend = parse(() -> KernelBackend.parse(args.string("kernels").orElse("native")));
    int threads = args.integer("threads", Runtime.getRuntime().availableProcessors(), 1, 256);
    var sampling = SamplingParams.greedy().toBuilder().ignoreEos(args.flag("ignore-eos"));
    args.number("temperature").ifPresent(sampling::temperature);
    args.number("top-p").ifPresent(sampling::topP);
    args.string("top-k").ifPresent(v -> sampling.topK(args.integer("top-k", 0, -1, Integer.MAX_VALUE)));
    args.longValue("seed").ifPresent(sampling::seed);
    SamplingParams params = parse(sampling::build);
    Path logitsOut = args.string("logits-out").map(Path::of).orElse(null);
    int speculative = args.integer("speculative-tokens", 0, 0, 16);
    if (speculative > 0 && logitsOut != null) throw new UsageException("generate: --logits-out works without --speculative-tokens only");

    try (Tokenizer tokenizer = Tokenizer.load(dir); Kernels kernels = backend.open(threads);
        DeepseekModel model = DeepseekModel.load(dir, precision, kernels, DemoModels.progress("loading"));
        TensorArena cacheArena = TensorArena.forModel()) {
      int[] prompt = switch (input) {
        case "prompt" -> tokenizer.encode(args.required("prompt"), true);
        case "chat" -> ChatEncoder.encode(tokenizer, tokenizer.chatTemplate()
            .orElseThrow(() -> new UsageException("generate: " + dir + " has no chat_template; use --prompt")),
            List.of(ChatMessage.user(args.required("chat"))), true, ChatEncoder.SpecialTokens.TEXT); // as the gateway
        default -> promptIds(args.required("prompt-ids"), model.config().vocabSize());
      };
      if (prompt.length == 0) throw new UsageException("generate: the prompt is empty");
      int total = prompt.length + maxNew;
      if (total > model.config().maxPositionEmbeddings())
        throw new UsageException("generate: prompt (" + prompt.length + ") + max-new-tokens (" + maxNew
            + ") exceeds the model's context of " + model.config().maxPositionEmbeddings() + " tokens");
      if (speculative > 0) {
        if (maxNew == 0) throw new UsageException("generate: --speculative-tokens needs --max-new-tokens ≥ 1");
        runSpeculative(model, tokenizer, prompt, maxNew, params, speculative);
        return;
      }
      run(model, tokenizer, prompt, maxNew, new Sampler(params.validateFor(model.config().vocabSize()), model.config().vocabSize()),
          params, logitsOut, cacheArena);
    }
  }

  private static void run(DeepseekModel model, Tokenizer tokenizer, int[] prompt, int maxNew, Sampler sampler, SamplingParams params,
      Path logitsOut, TensorArena cacheArena) throws Exception {
    int vocab = model.config().vocabSize();
    int[] blocks = new int[(prompt.length + maxNew + PAGE_SIZE - 1) / PAGE_SIZE];
    for (int i = 0; i < blocks.length; i++) blocks[i] = i;
    LatentKvCache cache = model.newCache(cacheArena, Math.max(blocks.length, 1), PAGE_SIZE);
    List<float[]> logitRows = new ArrayList<>();
    TokenCounts history = TokenCounts.ofPrompt(prompt);
    IncrementalDetokenizer detok = tokenizer.newDetokenizer(true);
    List<Integer> generated = new ArrayList<>();
    System.err.println("prompt ids: " + Arrays.toString(prompt));

    long start = System.nanoTime(), firstToken = 0;
    float[] last;
    try (TensorArena scratch = TensorArena.workspace()) { // one step's temporaries, rewound every step
      var out = model.forward(ForwardBatch.single(prompt, 0, prompt.length, blocks, logitsOut != null), cache, scratch);
      float[] all = out.logits().toFloatArray();
      for (int r = 0; r < all.length / vocab; r++) logitRows.add(Arrays.copyOfRange(all, r * vocab, (r + 1) * vocab));
      last = Arrays.copyOfRange(all, all.length - vocab, all.length);
      for (int step = 0; step < maxNew; step++) {
        int token = sampler.sample(last, history).tokenId();
        if (step == 0) firstToken = System.nanoTime();
        generated.add(token);
        history.addGenerated(token);
        System.out.print(detok.add(token));
        System.out.flush();
        boolean stop = (!params.ignoreEos() && model.config().isEos(token)) || params.stopTokenIds().contains(token);
        if (stop || step == maxNew - 1) break;
        scratch.reset();
        int position = prompt.length + step;
        last = model.forward(ForwardBatch.single(new int[] {token}, position, prompt.length, blocks, false), cache, scratch)
            .logits().toFloatArray();
        if (logitsOut != null) logitRows.add(last);
      }
    }
    System.out.println(detok.finish());
    long end = System.nanoTime();
    if (generated.isEmpty()) firstToken = end; // --max-new-tokens 0: all of it was prefill
    System.err.println("generated ids: " + generated);
    double prefillSeconds = (firstToken - start) / 1e9, decodeSeconds = (end - firstToken) / 1e9;
    System.err.printf("prefill %d tokens in %.3f s; decode %d tokens at %.1f tokens/s%n", prompt.length, prefillSeconds,
        generated.size(), generated.size() > 1 ? (generated.size() - 1) / decodeSeconds : 0.0);
    if (logitsOut != null) {
      Npy.writeFloat32(logitsOut, logitRows, vocab);
      System.err.println("wrote logits " + logitRows.size() + " × " + vocab + " to " + logitsOut);
    }
  }

  /** The prompt through an {@link Engine} with MTP speculative decoding of {@code k} drafts per step. */
  private static void runSpeculative(DeepseekModel model, Tokenizer tokenizer, int[] prompt, int maxNew, SamplingParams params, int k)
      throws Exception {
    int pages = (prompt.length + maxNew + k + PAGE_SIZE) / PAGE_SIZE + 1;
    IncrementalDetokenizer detok = tokenizer.newDetokenizer(true);
    List<Integer> generated = new ArrayList<>();
    System.err.println("prompt ids: " + Arrays.toString(prompt));
    long start = System.nanoTime(), firstToken = 0;
    EngineStats stats;
    try (Engine engine = Engine.create(model, model.localExperts(), SchedulerConfig.defaults(), new KvCacheConfig(pages, PAGE_SIZE, false),
            KvConnector.NONE, null, DeepseekRunner.DEFAULT_MICRO_BATCH_THRESHOLD, k)) {
      RequestStream stream = engine.submit(GenerationRequest.of("generate", prompt, params, maxNew));
      for (RequestOutput out; ; ) {
        out = stream.next(Duration.ofHours(1));
        for (int token : out.tokenIds()) {
          if (generated.isEmpty()) firstToken = System.nanoTime();
          generated.add(token);
          System.out.print(detok.add(token));
        }
        System.out.flush();
        if (out.finished()) {
          if (out.error() != null) throw new IllegalStateException("generate failed: " + out.error());
          break;
        }
      }
      long deadline = System.nanoTime() + 5_000_000_000L;
      while ((stats = engine.stats()).numRunning() > 0 && System.nanoTime() < deadline) Thread.onSpinWait();
    }
    System.out.println(detok.finish());
    long end = System.nanoTime();
    System.err.println("generated ids: " + generated);
    double prefillSeconds = (firstToken - start) / 1e9, decodeSeconds = (end - firstToken) / 1e9;
    System.err.printf("prefill %d tokens in %.3f s; decode %d tokens at %.1f tokens/s%n", prompt.length, prefillSeconds,
        generated.size(), generated.size() > 1 ? (generated.size() - 1) / decodeSeconds : 0.0);
    SpecDecodeStats spec = stats.speculation();
    System.err.printf("speculative decoding (MTP, k=%d): %d drafts, %d draft tokens, %d accepted (%.1f%%), per position %s, "
        + "mean acceptance length %.2f, %d steps%n", k, spec.numDrafts(), spec.numDraftTokens(), spec.numAcceptedTokens(),
        100 * spec.acceptanceRate(), Arrays.toString(spec.acceptedPerPosition()), spec.meanAcceptanceLength(), stats.steps());
  }

  private static int[] promptIds(String csv, int vocab) {
    String[] parts = csv.split(",");
    int[] ids = new int[parts.length];
    for (int i = 0; i < parts.length; i++) {
      try {
        ids[i] = Integer.parseInt(parts[i].trim());
      } catch (NumberFormatException e) {
        throw new UsageException("generate: --prompt-ids must be comma-separated integers, got '" + parts[i] + "'");
      }
      if (ids[i] < 0 || ids[i] >= vocab) throw new UsageException("generate: prompt id " + ids[i] + " is outside the vocabulary [0, " + vocab + ")");
    }
    return ids;
  }

  private static <T> T parse(java.util.function.Supplier<T> parser) {
    try {
      return parser.get();
    } catch (IllegalArgumentException e) {
      throw new UsageException("generate: " + e.getMessage());
    }
  }
}
