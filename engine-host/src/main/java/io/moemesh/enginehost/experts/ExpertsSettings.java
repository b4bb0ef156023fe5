package io.moemesh.enginehost.experts;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Where an engine's MoE experts run and how long it waits for them: the framework-free form of
 * engine-host's {@code ExpertsConfig} ({@code moemesh.experts.*}), whose Javadoc and docs/configuration.md give each key.
 *
 * @param routedRemote the routed experts are on the expert-svc {@code shards}, in shard order
 * @param sharedRemote the shared experts are on the service at {@code sharedAddress}
 * @param stepDeadline how long after its start a step may retry assignments whose shard failed
 */
public record ExpertsSettings(boolean routedRemote, List<String> shards, int redundantSlots, boolean sharedRemote,
    Optional<String> sharedAddress, Duration timeout, Duration stepDeadline) {

  public ExpertsSettings {
    if (routedRemote && shards.isEmpty()) throw new IllegalArgumentException("moemesh.experts.shards: routed=remote needs the shards' addresses");
    if (sharedRemote && sharedAddress.isEmpty()) throw new IllegalArgumentException("moemesh.experts.shared-address: shared=remote needs an address");
    if (sharedRemote && !routedRemote) throw new IllegalArgumentException("moemesh.experts.shared=remote needs routed=remote too");
    if (stepDeadline.isNegative() || stepDeadline.isZero())
      throw new IllegalArgumentException("moemesh.experts.step-deadline must be positive, got " + stepDeadline);
    if (redundantSlots < 0) throw new IllegalArgumentException("moemesh.experts.redundant-slots must be ≥ 0, got " + redundantSlots);
  }
}
