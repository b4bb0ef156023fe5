package io.moemesh.expert;

import io.moemesh.kernels.KernelBackend;
import io.moemesh.model.Precision;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/** Settings of an expert service ({@code moemesh.expert.*}). */
@ConfigMapping(prefix = "moemesh.expert")
public interface ExpertConfig {

  enum Role { ROUTED, SHARED }

  /** {@code routed}: a shard of the routed experts; {@code shared}: the shared experts of every MoE layer. */
  @WithDefault("routed")
  Role role();

  /** A routed shard's index in {@code [0, num-shards)}; its slots are {@code [shard·s, (shard+1)·s)} of every layer. */
  @WithDefault("0")
  int shard();

  /** Routed shards in the mesh; with the experts and redundant slots, it fixes the starting placement. */
  @WithDefault("1")
  int numShards();

  /** Slots per MoE layer beyond one per expert, for copies of hot experts. */
  @WithDefault("0")
  int redundantSlots();

  /** Checkpoint directory (config.json + safetensors). */
  Path modelDir();

  /** exact | bf16 | int8: must equal the attention replicas' precision. */
  @WithDefault("int8")
  Precision precision();

  @WithDefault("native")
  KernelBackend kernels();

  /** Kernel threads; default all cores. */
  OptionalInt threads();

  /** Dispatch frames per layer the load counters cover (the balancer's window). */
  @WithDefault("1024")
  int loadWindow();

  /**
   * Every routed shard's gRPC address (host:port), in shard order, this one included: the failover's heartbeats (on
   * every routed shard) and the balancer's shards, and where a restarted shard finds the placement to resume.
   */
  Optional<List<String>> peers();

  Balancer balancer();

  Failover failover();

  /**
   * Losing a routed shard, watched by every routed shard over {@link #peers()}; the lowest-numbered live one coordinates
   * (docs/experts.md, "Losing a shard").
   */
  interface Failover {
    /**
     * How often this shard asks every routed shard for Info; a shard whose heartbeats fail {@link #misses()} in a row
     * (refused, an error, the deadline passed), or that has answered nothing for the deadline plus {@link #misses()}
     * intervals while a heartbeat waits on it (hung: 2 s + 3 × 500 ms), is lost and its slots are hosted on the live
     * shards, until it answers again. 0: no failover (a lost shard's experts wait for it). Each heartbeat's deadline is
     * twice this, at least 2 s; a heartbeat waits one interval for answers and leaves a late one under way. A shard
     * counts as lost only once it has answered: one still loading is starting.
     */
    @WithDefault("500ms")
    Duration heartbeat();

    /** Heartbeats in a row a shard must fail to count as lost (a busy shard answers late, a dead one never); also sets the silence bound. */
    @WithDefault("3")
    int misses();
  }

  /** Live rebalancing, run by routed shard 0 over {@link #peers()} (docs/architecture.md, "Expert parallelism"). */
  interface Balancer {
    /**
     * How often shard 0 sums every shard's load, rebalances, and (when the placement changes) prepares the new
     * placement on every shard and then publishes it to the attention replicas. 0: no balancer. Other shards and
     * the shared role ignore it, so one setting can serve every expert service.
     */
    @WithDefault("0s")
    Duration interval();

    /**
     * How long frames of a placement older than the active one must have stopped before the next change: the
     * next Prepare drops that placement's experts, so a replica still on it would fail. Above the replicas'
     * {@code moemesh.experts.placement-poll} plus a step.
     */
    @WithDefault("5s")
    Duration settle();

    /** The smallest rise in balancedness (mean over max tokens per shard, in (0, 1]) worth moving experts for. */
    @WithDefault("0.02")
    double minGain();

    /** Routed tokens per MoE layer (summed over the shards' windows) below which the load is noise: no move. */
    @WithDefault("256")
    long minTokens();

    /** Deadline of one shard's Prepare (it loads expert weights) and, divided by 10, of Info and Load. */
    @WithDefault("120s")
    Duration timeout();
  }
}
