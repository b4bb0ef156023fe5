package io.moemesh.planner.connect;

import io.moemesh.planner.Stage;
import java.util.EnumMap;
import java.util.Map;

/**
 * Changes nothing: a stage has as many replicas as discovery finds, and a scale is only remembered (logged and exported
 * by the round). For meshes the planner may not scale, e.g. {@code bin/moemesh up}'s processes, to see what it would do.
 */
public final class AdvisoryConnector implements ReplicaConnector {
  private final ReplicaDiscovery discovery;
  private final Map<Stage, Integer> advised = new EnumMap<>(Stage.class);

  public AdvisoryConnector(ReplicaDiscovery discovery) {
    this.discovery = discovery;
  }

  @Override
  public int replicas(Stage stage) {
    return discovery.metricsUrls(stage).size();
  }

  @Override
  public synchronized void scale(Stage stage, int replicas) {
    advised.put(stage, replicas);
  }

  /** The last count advised for the stage, if any. */
  public synchronized Integer advised(Stage stage) {
    return advised.get(stage);
  }
}
