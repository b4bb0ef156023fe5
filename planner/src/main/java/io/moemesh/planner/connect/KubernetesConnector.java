package io.moemesh.planner.connect;

import io.fabric8.kubernetes.api.model.autoscaling.v1.Scale;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.RollableScalableResource;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.moemesh.planner.Stage;

/**
 * Scales the Deployments {@code moemesh-prefill} and {@code moemesh-decode} (deploy/k8s/base) through their
 * {@code scale} subresource, the least the planner's Role must grant (deploy/k8s/planner/rbac.yaml: get, update and patch
 * {@code deployments/scale}; the client writes it with a PUT, kubectl scale with a PATCH). A Deployment that does not exist is an error, never created.
 */
public final class KubernetesConnector implements ReplicaConnector {
  private final KubernetesClient client;
  private final String namespace;

  public KubernetesConnector(KubernetesClient client, String namespace) {
    this.client = client;
    this.namespace = namespace;
  }

  /** The Deployment of a stage, as deploy/k8s/base names it. */
  public static String deploymentName(Stage stage) {
    return "moemesh-" + stage.label();
  }

  @Override
  public int replicas(Stage stage) {
    try {
      Scale scale = deployment(stage).scale();
      if (scale == null || scale.getSpec() == null) throw new ConnectorException(stage, "no Deployment " + namespace + "/" + deploymentName(stage));
      Integer replicas = scale.getSpec().getReplicas();
      return replicas == null ? 0 : replicas;
    } catch (KubernetesClientException e) {
      throw new ConnectorException(stage, "reading the scale of " + namespace + "/" + deploymentName(stage), e);
    }
  }

  @Override
  public void scale(Stage stage, int replicas) {
    if (replicas < 0) throw new IllegalArgumentException("replicas must be >= 0, not " + replicas);
    try {
      // read-modify-write of the subresource: the resourceVersion makes a concurrent change a conflict, retried next round
      Scale scale = deployment(stage).scale();
      if (scale == null || scale.getSpec() == null) throw new ConnectorException(stage, "no Deployment " + namespace + "/" + deploymentName(stage));
      scale.getSpec().setReplicas(replicas);
      deployment(stage).scale(scale);
    } catch (KubernetesClientException e) {
      throw new ConnectorException(stage, "scaling " + namespace + "/" + deploymentName(stage) + " to " + replicas, e);
    }
  }

  private RollableScalableResource<Deployment> deployment(Stage stage) {
    return client.apps().deployments().inNamespace(namespace).withName(deploymentName(stage));
  }
}
