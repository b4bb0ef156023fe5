package io.moemesh.planner.connect;

import io.moemesh.planner.Stage;

/**
 * Where the planner reads and sets each stage's replica count: the Kubernetes Deployments
 * ({@link KubernetesConnector}), or local processes. Implementations throw {@link ConnectorException} with the stage
 * and the reason when the platform refuses or cannot be reached; the planner then skips the round.
 */
public interface ReplicaConnector {
  /** The replicas the stage is set to (what it is scaling to, not only the ready ones). */
  int replicas(Stage stage);

  /** Sets the stage to {@code replicas}; returns once the platform accepted it, not once the replicas are ready. */
  void scale(Stage stage, int replicas);
}
