package io.moemesh.gateway;

import io.moemesh.proto.common.v1.SampledToken;
import io.moemesh.proto.common.v1.SamplingParams;
import java.util.Arrays;
import java.util.Optional;

/**
 * One choice's progress across decode replicas: the tokens delivered downstream so far, and the call that continues
 * the choice when its replica is lost mid-stream (docs/reliability.md, "Drain and migration").
 *
 * <p>The continuation is a new generation whose prompt is the original prompt followed by the delivered tokens, with
 * the budget that is left. A greedy choice continues with exactly the tokens of an uninterrupted run (the engine is
 * batch invariant, and recomputing prompt + output gives the KV and logits decoding them did). A seeded sampled
 * choice continues from a seed derived from its own and the number of tokens delivered ({@link #continuationSeed}):
 * reproducible for a given cut, a fresh random stream rather than the uninterrupted run's. The penalties
 * (presence, frequency) see the delivered tokens as prompt in the continuation. Usage stays the original's: prompt
 * tokens are the original prompt, completion tokens all tokens delivered, cached prompt tokens the first leg's.
 *
 * <p>Chunks arrive serially, but a failure and the next leg may be signalled on other threads: methods synchronize.
 */
final class ChoiceProgress {
  private final BackendCall original;
  private final int maxMigrations;
  private int[] delivered = new int[16];
  private int numDelivered;
  private int migrations;
  private boolean finished;

  ChoiceProgress(BackendCall original, int maxMigrations) {
    this.original = original;
    this.maxMigrations = maxMigrations;
  }

  /**
   * Records a chunk on its way downstream; returns what to pass on: a continuation's chunks without their usage
   * (its prompt-cache figures count the continuation's prompt, not the client's).
   */
  synchronized BackendChunk delivered(BackendChunk chunk) {
    for (SampledToken t : chunk.tokens()) {
      if (numDelivered == delivered.length) delivered = Arrays.copyOf(delivered, numDelivered * 2);
      delivered[numDelivered++] = t.getTokenId();
    }
    finished |= chunk.finished();
    return migrations == 0 || chunk.usage() == null ? chunk : new BackendChunk(chunk.tokens(), chunk.finish(), null);
  }

  synchronized boolean finished() {
    return finished;
  }

  synchronized int numDelivered() {
    return numDelivered;
  }

  synchronized int migrations() {
    return migrations;
  }

  /** Tokens the choice may still generate. */
  synchronized int remaining() {
    return original.maxTokens() - numDelivered;
  }

  /**
   * Why {@code failure} may continue on another replica; empty when it may not: nothing delivered yet (the legs retry
   * those themselves), the choice finished, the migrations used up, or a failure that is not the replica's going.
   */
  synchronized Optional<MigrationReason> migratable(Throwable failure) {
    if (finished || numDelivered == 0 || migrations >= maxMigrations) return Optional.empty();
    return MigrationReason.of(failure);
  }

  /** Counts a migration and returns the call that continues the choice. */
  synchronized BackendCall migrate() {
    if (remaining() <= 0) throw new IllegalStateException("nothing left to generate after " + numDelivered + " tokens");
    migrations++;
    int[] prompt = Arrays.copyOf(original.promptIds(), original.promptIds().length + numDelivered);
    System.arraycopy(delivered, 0, prompt, original.promptIds().length, numDelivered);
    SamplingParams sampling = original.sampling();
    if (sampling.hasSeed()) sampling = sampling.toBuilder().setSeed(continuationSeed(sampling.getSeed(), numDelivered)).build();
    return new BackendCall(original.correlationId(), original.rpcId() + "-m" + migrations, original.tracing(), prompt, sampling,
        remaining(), original.migrations());
  }

  /** SplitMix64's finalizer over the seed and the cut: a seed per (seed, tokens delivered), uncorrelated with the seed's own stream. */
  static long continuationSeed(long seed, int numDelivered) {
    long z = seed + 0x9E3779B97F4A7C15L * (numDelivered + 1L);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
