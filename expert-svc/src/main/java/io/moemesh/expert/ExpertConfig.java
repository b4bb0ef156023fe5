package io.moemesh.expert;

import io.moemesh.kernels.KernelBackend;
import io.moemesh.model.Precision;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.nio.file.Path;
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
}
