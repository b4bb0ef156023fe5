package io.moemesh.enginehost;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Function;

/**
 * Where an engine's MoE experts run ({@code moemesh.experts.*}):
 * <pre>
 *   key              default  meaning
 *   routed           local    local | remote: the routed experts in this process, or on expert-svc shards
 *   shards           —        with routed=remote: the shards' gRPC addresses (host:port), in shard order
 *   redundant-slots  0        slots per MoE layer beyond one per expert (must match the shards')
 *   shared           local    local | remote: the shared experts here, or on a shared-expert service
 *   shared-address   —        with shared=remote: its gRPC address
 *   timeout          30s      how long one MoE layer waits for a shard's answer
 *   step-deadline    10s      how long after its start a step may retry assignments whose shard failed, waiting for
 *                             a live holder (the shard back, or a placement hosting its slots elsewhere); then the
 *                             step's requests fail with "expert-shard loss: …"
 *   placement-poll   1s       with routed=remote: how often decode-svc asks shard 0 for a newer placement
 *                             (read by decode-svc's PlacementWatcher)
 * </pre>
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

  public static ExpertsSettings fromConfig(Function<String, Optional<String>> lookup) {
    Function<String, Optional<String>> at = key -> lookup.apply("moemesh.experts." + key).map(String::trim).filter(v -> !v.isEmpty());
    try {
      return new ExpertsSettings(remote(at, "routed"),
          at.apply("shards").map(v -> Arrays.stream(v.split(",")).map(String::trim).filter(a -> !a.isEmpty()).toList()).orElse(List.of()),
          Integer.parseInt(at.apply("redundant-slots").orElse("0")), remote(at, "shared"), at.apply("shared-address"),
          duration(at, "timeout", "30s"), duration(at, "step-deadline", "10s"));
    } catch (java.time.format.DateTimeParseException | NumberFormatException e) {
      throw new IllegalArgumentException("moemesh.experts: " + e.getMessage(), e);
    }
  }

  private static Duration duration(Function<String, Optional<String>> at, String key, String fallback) {
    return Duration.parse("PT" + at.apply(key).orElse(fallback).toUpperCase(Locale.ROOT));
  }

  private static boolean remote(Function<String, Optional<String>> at, String key) {
    String v = at.apply(key).orElse("local").toLowerCase(Locale.ROOT);
    return switch (v) {
      case "local" -> false;
      case "remote" -> true;
      default -> throw new IllegalArgumentException("moemesh.experts." + key + " must be local or remote, got '" + v + "'");
    };
  }
}
