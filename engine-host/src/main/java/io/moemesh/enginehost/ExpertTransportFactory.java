package io.moemesh.enginehost;

import io.moemesh.engine.experts.ExpertTransport;
import io.moemesh.model.ModelConfig;
import io.moemesh.model.Precision;
import io.moemesh.model.moe.Placement;
import java.util.Optional;

/**
 * Opens the links to the expert services (the service module provides it: it owns the gRPC stubs). Blocks
 * until every service answers and agrees with this engine's model, precision and shard layout.
 */
public interface ExpertTransportFactory {
  ExpertTransport connect(ExpertsSettings settings, ModelConfig model, Precision precision);

  /**
   * The placement the expert services' balancer has published (routed shard 0's), if any: a replica that
   * starts after a rebalance begins with it, not with the starting placement. Called after {@link #connect}.
   */
  default Optional<Placement> activePlacement(ExpertsSettings settings, ModelConfig model) {
    return Optional.empty();
  }
}
