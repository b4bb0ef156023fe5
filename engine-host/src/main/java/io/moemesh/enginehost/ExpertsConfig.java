package io.moemesh.enginehost;

import io.moemesh.enginehost.ConfigConverters.NonNegative;
import io.moemesh.enginehost.experts.ExpertsSettings;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithConverter;
import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Where an engine's MoE experts run ({@code moemesh.experts.*}, listed in docs/configuration.md);
 * {@link #settings()} builds the {@link ExpertsSettings} the engine's expert transport uses. Durations take
 * {@code 500ms}, {@code 30s}, {@code PT1S}.
 */
@ConfigMapping(prefix = "moemesh.experts")
public interface ExpertsConfig {
  /** Where a kind of expert runs. */
  enum Location {
    /** In this process. */
    LOCAL,
    /** On expert services. */
    REMOTE
  }

  /** The routed experts: here, or on the expert-svc {@link #shards()}. */
  @WithDefault("local")
  Location routed();

  /** With routed=remote: the shards' gRPC addresses (host:port), in shard order. */
  Optional<List<String>> shards();

  /** Slots per MoE layer beyond one per expert (must match the shards'). */
  @WithDefault("0")
  @WithConverter(NonNegative.class)
  int redundantSlots();

  /** The shared experts: here, or on the service at {@link #sharedAddress()}. */
  @WithDefault("local")
  Location shared();

  /** With shared=remote: the shared-expert service's gRPC address. */
  Optional<String> sharedAddress();

  /** How long one MoE layer waits for a shard's answer. */
  @WithDefault("30s")
  Duration timeout();

  /**
   * How long after its start a step may retry assignments whose shard failed, waiting for a live holder; then the
   * step's requests fail with "expert-shard loss: …".
   */
  @WithDefault("10s")
  Duration stepDeadline();

  /** With routed=remote: how often the engine asks the shards for a newer placement (PlacementWatcher). */
  @WithDefault("1s")
  Duration placementPoll();

  /** The experts' settings. */
  default ExpertsSettings settings() {
    if (timeout().isNegative() || timeout().isZero())
      throw new IllegalArgumentException("moemesh.experts.timeout must be positive, got " + timeout());
    if (placementPoll().isNegative() || placementPoll().isZero())
      throw new IllegalArgumentException("moemesh.experts.placement-poll must be positive, got " + placementPoll());
    List<String> addresses = shards().orElse(List.of()).stream().map(String::trim).filter(a -> !a.isEmpty()).toList();
    return new ExpertsSettings(routed() == Location.REMOTE, addresses, redundantSlots(), shared() == Location.REMOTE,
        sharedAddress().map(String::trim).filter(a -> !a.isEmpty()), timeout(), stepDeadline());
  }
}
