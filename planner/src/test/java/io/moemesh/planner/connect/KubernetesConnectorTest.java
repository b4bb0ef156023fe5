package io.moemesh.planner.connect;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.moemesh.planner.Stage;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Against fabric8's mock API server in CRUD mode: it stores what is created and serves it back. */
@EnableKubernetesMockClient(crud = true)
class KubernetesConnectorTest {
  static final String NS = "moemesh";
  KubernetesMockServer server;
  KubernetesClient client;

  @BeforeEach
  void createDeployments() {
    for (Stage stage : Stage.values()) client.apps().deployments().inNamespace(NS).resource(deployment(stage, 1)).create();
  }

  static Deployment deployment(Stage stage, int replicas) {
    String name = KubernetesConnector.deploymentName(stage);
    return new DeploymentBuilder().withNewMetadata().withName(name).endMetadata()
        .withNewSpec().withReplicas(replicas).withNewSelector().addToMatchLabels("app.kubernetes.io/name", name).endSelector()
        .withNewTemplate().withNewMetadata().addToLabels("app.kubernetes.io/name", name).endMetadata()
        .withNewSpec().addNewContainer().withName(stage.label()).withImage("moemesh/" + stage.label() + "-svc").endContainer().endSpec()
        .endTemplate().endSpec().build();
  }

  @Test
  void readsAndScalesEachStagesDeployment() {
    var connector = new KubernetesConnector(client, NS);
    assertThat(connector.replicas(Stage.PREFILL)).isEqualTo(1);
    connector.scale(Stage.PREFILL, 3);
    assertThat(client.apps().deployments().inNamespace(NS).withName("moemesh-prefill").get().getSpec().getReplicas()).isEqualTo(3);
    assertThat(connector.replicas(Stage.PREFILL)).isEqualTo(3);
    assertThat(connector.replicas(Stage.DECODE)).isEqualTo(1);
  }
}
