package io.moemesh.cli;

import io.moemesh.engine.Engine;
import io.moemesh.engine.EngineSpec;
import io.moemesh.engine.EngineStats;
import io.moemesh.engine.GenerationRequest;
import io.moemesh.engine.KvCacheConfig;
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
import io.moemesh.tokenizer.ChatEncoder;
import io.moemesh.tokenizer.ChatMessage;
import io.moemesh.tokenizer.IncrementalDetokenizer;
import io.moemesh.tokenizer.Tokenizer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code generate}: one prompt through the model in this process — a prefill pass, then one decode step per
 * token through the paged KV cache — printing the ids and streaming the text. {@code --logits-out} writes
 * the logits after every fed token: the prompt rows of the prefill pass, then one row per decode step.
 * {@code --speculative-tokens k} (k &gt; 0) runs the prompt through the {@link Engine} instead, with MTP speculative
 * decoding of k drafts per step, and prints the drafts' acceptance.
 */
@Command(name = "generate", sortOptions = false, sortSynopsis = false, description = {
    "Run one prompt in this process: a prefill pass, then one decode step per token, streaming the text to stdout.",
    "Without --model, the trained demo model (models/demo). --speculative-tokens K: through the engine with K MTP"
        + " drafts a step, printing their acceptance."})
final class GenerateCommand implements Callable<Integer> {
  private static final int PAGE_SIZE = 16;

  @Mixin HelpOption help;
  @Spec CommandSpec spec;

  @Option(names = "--model", paramLabel = "DIR", description = "The checkpoint directory (default: the trained demo model).")
  Path modelDir;

  @ArgGroup(multiplicity = "1")
  Input input;

  /** Exactly one of the three ways to give the prompt. */
  static final class Input {
    @Option(names = "--prompt", paramLabel = "TEXT", description = "Text, encoded with BOS.")
    String prompt;

    @Option(names = "--chat", paramLabel = "TEXT", description = "A user message, through the model's chat template (as the gateway).")
    String chat;

    @Option(names = "--prompt-ids", split = "\\s*,\\s*", splitSynopsisLabel = ",", paramLabel = "ID",
        description = "Token ids, e.g. 1,2,3.")
    int[] promptIds;
  }

  @Option(names = "--max-new-tokens", paramLabel = "N", description = "Tokens to generate at most (default: ${DEFAULT-VALUE}).")
  int maxNewTokens = 16;

  @Option(names = "--precision", paramLabel = "exact|bf16|int8", description = "The weights' precision (default: int8).")
  Precision precision = Precision.INT8;

  @Option(names = "--temperature", paramLabel = "T", description = "Sampling temperature (default: greedy).")
  Double temperature;

  @Option(names = "--top-p", paramLabel = "P", description = "Nucleus sampling's probability mass.")
  Double topP;

  @Option(names = "--top-k", paramLabel = "K", description = "Sample among the K likeliest tokens (-1: all).")
  Integer topK;

  @Option(names = "--seed", paramLabel = "S", description = "The sampler's seed.")
  Long seed;

  @Option(names = "--logits-out", paramLabel = "FILE.npy",
      description = "Write the logits after every fed token (the prompt's rows, then one per decode step) as float32.")
  Path logitsOut;

  @Option(names = "--kernels", paramLabel = "native|reference", description = "The kernels (default: native).")
  KernelBackend kernels = KernelBackend.NATIVE;

  @Option(names = "--threads", paramLabel = "N", description = "Kernel threads (default: every core, ${DEFAULT-VALUE}).")
  int threads = Runtime.getRuntime().availableProcessors();

  @Option(names = "--ignore-eos", description = "Go on past the end-of-sequence token.")
  boolean ignoreEos;

  @Option(names = "--speculative-tokens", paramLabel = "K",
      description = "MTP speculative decoding with K drafts a step, through the engine (default: ${DEFAULT-VALUE} = off).")
  int speculativeTokens = 0;

  @Option(names = "--speculative-draft-vocabulary", paramLabel = "N", description = "With --speculative-tokens: the MTP head drafts"
      + " over the first N token ids only (default: ${DEFAULT-VALUE} = all).")
  int draftVocabulary = 0;

  @Override
  public Integer call() throws Exception {
    inRange("--max-new-tokens", maxNewTokens, 0, 1 << 20);
    inRange("--threads", threads, 1, 256);
    inRange("--speculative-tokens", speculativeTokens, 0, 16);
    if (topK != null) inRange("--top-k", topK, -1, Integer.MAX_VALUE);
    var sampling = SamplingParams.greedy().toBuilder().ignoreEos(ignoreEos);
    if (temperature != null) sampling.temperature(temperature);
    if (topP != null) sampling.topP(topP);
    if (topK != null) sampling.topK(topK);
    if (seed != null) sampling.seed(seed);
    SamplingParams params;
    try {
      params = sampling.build();
    } catch (IllegalArgumentException e) {
      throw Cli.usageError(spec, e.getMessage());
    }
    if (speculativeTokens > 0 && logitsOut != null) throw Cli.usageError(spec, "--logits-out works without --speculative-tokens only");
    Path dir = modelDir != null ? modelDir : DemoModels.ensure(DemoModels.DEFAULT);
    int maxNew = maxNewTokens;

    try (Tokenizer tokenizer = Tokenizer.load(dir); Kernels kernels = this.kernels.open(threads);
        DeepseekModel model = DeepseekModel.load(dir, precision, kernels, DemoModels.progress("loading"));
        TensorArena cacheArena = TensorArena.forModel()) {
      int[] prompt;
      if (input.prompt != null) prompt = tokenizer.encode(input.prompt, true);
      else if (input.chat != null) prompt = ChatEncoder.encode(tokenizer, tokenizer.chatTemplate()
          .orElseThrow(() -> Cli.usageError(spec, dir + " has no chat_template; use --prompt")),
          List.of(ChatMessage.user(input.chat)), true, ChatEncoder.SpecialTokens.TEXT); // as the gateway
      else prompt = promptIds(input.promptIds, model.config().vocabSize());
      if (prompt.length == 0) throw Cli.usageError(spec, "the prompt is empty");
      int total = prompt.length + maxNew;
      if (total > model.config().maxPositionEmbeddings())
        throw Cli.usageError(spec, "prompt (" + prompt.length + ") + max-new-tokens (" + maxNew
            + ") exceeds the model's context of " + model.config().maxPositionEmbeddings() + " tokens");
      if (speculativeTokens > 0) {
        if (maxNew == 0) throw Cli.usageError(spec, "--speculative-tokens needs --max-new-tokens ≥ 1");
        inRange("--speculative-draft-vocabulary", draftVocabulary, 0, model.config().vocabSize());
        model.draftVocabulary(draftVocabulary);
        runSpeculative(model, tokenizer, prompt, maxNew, params, speculativeTokens);
        return 0;
      }
      run(model, tokenizer, prompt, maxNew, new Sampler(params.validateFor(model.config().vocabSize()), model.config().vocabSize()),
          params, logitsOut, cacheArena);
    }
    return 0;
  }

  private void inRange(String name, int value, int min, int max) {
    if (value < min || value > max) throw Cli.usageError(spec, name + " must be in [" + min + ", " + max + "], got " + value);
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
    try (Engine engine = Engine.create(EngineSpec.of(model, SchedulerConfig.defaults(), new KvCacheConfig(pages, PAGE_SIZE, false))
        .withSpeculativeTokens(k))) {
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

  private int[] promptIds(int[] ids, int vocab) {
    for (int id : ids)
      if (id < 0 || id >= vocab) throw Cli.usageError(spec, "prompt id " + id + " is outside the vocabulary [0, " + vocab + ")");
    return ids;
  }
}
