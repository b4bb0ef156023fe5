package io.moemesh.enginehost;

import io.moemesh.engine.experts.ExpertTransport;
import io.moemesh.model.ModelConfig;
import io.moemesh.model.Precision;

/**
 * Opens the links to the expert services (the service module provides it: it owns the gRPC stubs). Blocks
 * until every service answers and agrees with this engine's model, precision and shard layout.
 */
public interface ExpertTransportFactory {
  ExpertTransport connect(ExpertsSettings settings, ModelConfig model, Precision precision);
}
