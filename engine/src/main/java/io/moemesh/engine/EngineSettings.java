package io.moemesh.engine;

import io.moemesh.kernels.KernelBackend;
import io.moemesh.model.Precision;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * Everything needed to bring up one engine: which model, how to compute it, how much KV it may hold and how
 * it schedules. The services fill it from their configuration; the CLI from its flags.
 *
 * @param kvCacheBytes memory for latent-KV pages (all layers); the page count follows from the model
 * @param microBatchThreshold tokens per step at or above which a step runs as two overlapped micro-batches
 *     (see {@link DeepseekRunner}); 0 = never
 * @param speculativeTokens draft tokens per request and step from the model's MTP module (speculative decoding);
 *     0 = off
 */
public record EngineSettings(Path modelDir, Precision precision, KernelBackend kernels, int threads, long kvCacheBytes,
    int pageSize, boolean prefixCaching, SchedulerConfig scheduler, int microBatchThreshold, int speculativeTokens) {

  public EngineSettings {
    Objects.requireNonNull(modelDir, "modelDir");
    Objects.requireNonNull(precision, "precision");
    Objects.requireNonNull(kernels, "kernels");
    Objects.requireNonNull(scheduler, "scheduler");
    if (threads < 1) throw new IllegalArgumentException("threads must be ≥ 1, got " + threads);
    if (kvCacheBytes < 1) throw new IllegalArgumentException("the KV cache needs memory, got " + kvCacheBytes + " bytes");
    if (pageSize < 1) throw new IllegalArgumentException("a KV page holds at least one token, got " + pageSize);
    if (microBatchThreshold < 0) throw new IllegalArgumentException("the micro-batch threshold must be ≥ 0 (0 = off), got " + microBatchThreshold);
    if (speculativeTokens < 0) throw new IllegalArgumentException("speculative tokens must be ≥ 0 (0 = off), got " + speculativeTokens);
  }

  /** Settings without speculative decoding. */
  public EngineSettings(Path modelDir, Precision precision, KernelBackend kernels, int threads, long kvCacheBytes, int pageSize,
      boolean prefixCaching, SchedulerConfig scheduler, int microBatchThreshold) {
    this(modelDir, precision, kernels, threads, kvCacheBytes, pageSize, prefixCaching, scheduler, microBatchThreshold, 0);
  }

  /** Settings with the default micro-batch threshold ({@link DeepseekRunner#DEFAULT_MICRO_BATCH_THRESHOLD}). */
  public EngineSettings(Path modelDir, Precision precision, KernelBackend kernels, int threads, long kvCacheBytes, int pageSize,
      boolean prefixCaching, SchedulerConfig scheduler) {
    this(modelDir, precision, kernels, threads, kvCacheBytes, pageSize, prefixCaching, scheduler, DeepseekRunner.DEFAULT_MICRO_BATCH_THRESHOLD);
  }

  /**
   * Reads the settings under {@code prefix} (e.g. {@code moemesh.engine}) from any key-value configuration —
   * the one definition both engine services use. Keys and defaults:
   * <pre>
   *   model-dir               (required) a checkpoint directory
   *   precision               int8          exact | bf16 | int8
   *   kernels                 native        native | reference
   *   threads                 all cores
   *   kv-cache-memory         512M          bytes for KV pages; suffix K, M or G
   *   page-size               16            tokens per KV page
   *   prefix-caching          true
   *   max-batched-tokens      2048          tokens per step
   *   max-running-requests    64
   *   policy                  fcfs          fcfs | priority
   *   length-buckets          true
   *   micro-batch-threshold   0             tokens per step from which a step runs as two overlapped
   *                                         micro-batches (each one's expert wait behind the other's
   *                                         attention); 0 = never. For remote experts, e.g. 64; with
   *                                         in-process experts it only costs
   *   speculative-tokens      0             draft tokens per request and step from the model's MTP
   *                                         module (speculative decoding); 0 = off; needs
   *                                         num_nextn_predict_layers ≥ 1
   * </pre>
   *
   * @throws IllegalArgumentException naming the key and the bad value
   */
  public static EngineSettings fromConfig(String prefix, Function<String, Optional<String>> lookup) {
    Function<String, Optional<String>> at = key -> lookup.apply(prefix + "." + key).map(String::trim);
    String dir = at.apply("model-dir").orElseThrow(() -> new IllegalArgumentException(prefix + ".model-dir is not set: give a checkpoint directory"));
    var scheduler = new SchedulerConfig(
        integer(at, prefix, "max-batched-tokens", 2048), integer(at, prefix, "max-running-requests", 64),
        parse(at, prefix, "policy", "fcfs", v -> SchedulerConfig.Policy.valueOf(v.toUpperCase(Locale.ROOT))),
        parse(at, prefix, "length-buckets", "true", EngineSettings::bool));
    return new EngineSettings(Path.of(dir),
        parse(at, prefix, "precision", "int8", Precision::parse),
        parse(at, prefix, "kernels", "native", KernelBackend::parse),
        integer(at, prefix, "threads", Runtime.getRuntime().availableProcessors()),
        parse(at, prefix, "kv-cache-memory", "512M", EngineSettings::bytes),
        integer(at, prefix, "page-size", 16),
        parse(at, prefix, "prefix-caching", "true", EngineSettings::bool),
        scheduler,
        parse(at, prefix, "micro-batch-threshold", String.valueOf(DeepseekRunner.DEFAULT_MICRO_BATCH_THRESHOLD), EngineSettings::nonNegative),
        parse(at, prefix, "speculative-tokens", "0", EngineSettings::nonNegative));
  }

  private static int nonNegative(String v) {
    int n = Integer.parseInt(v);
    if (n < 0) throw new IllegalArgumentException("must be ≥ 0 (0 = off)");
    return n;
  }

  private static int integer(Function<String, Optional<String>> at, String prefix, String key, int fallback) {
    return parse(at, prefix, key, String.valueOf(fallback), Integer::parseInt);
  }

  private static <T> T parse(Function<String, Optional<String>> at, String prefix, String key, String fallback, Function<String, T> parser) {
    String value = at.apply(key).orElse(fallback);
    try {
      return parser.apply(value);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(prefix + "." + key + ": cannot use '" + value + "'"
          + (e.getMessage() != null ? " (" + e.getMessage() + ")" : ""), e);
    }
  }

  private static boolean bool(String v) {
    return switch (v.toLowerCase(Locale.ROOT)) {
      case "true" -> true;
      case "false" -> false;
      default -> throw new IllegalArgumentException("expected true or false");
    };
  }

  static long bytes(String v) {
    String s = v.toUpperCase(Locale.ROOT);
    long unit = s.endsWith("G") ? 1L << 30 : s.endsWith("M") ? 1L << 20 : s.endsWith("K") ? 1L << 10 : 1;
    long n = Long.parseLong(unit == 1 ? s : s.substring(0, s.length() - 1));
    if (n < 1) throw new IllegalArgumentException("must be positive");
    return Math.multiplyExact(n, unit);
  }
}
