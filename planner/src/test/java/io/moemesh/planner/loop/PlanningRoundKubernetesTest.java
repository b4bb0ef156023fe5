package io.moemesh.planner.loop;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.EndpointsBuilder;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.micrometer.prometheus.PrometheusConfig;
import io.micrometer.prometheus.PrometheusMeterRegistry;
import io.moemesh.planner.RecordedReplica;
import io.moemesh.planner.Stage;
import io.moemesh.planner.connect.KubernetesConnector;
import io.moemesh.planner.connect.KubernetesDiscovery;
import io.moemesh.planner.connect.ReplicaDiscovery;
import io.moemesh.planner.decide.Decision;
import io.moemesh.planner.decide.Planner;
import io.moemesh.planner.decide.PlannerSettings;
import io.moemesh.planner.decide.Profile;
import io.moemesh.planner.decide.Reason;
import io.moemesh.planner.decide.StageBounds;
import io.moemesh.planner.observe.MetricsScraper;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Whole rounds: the recorded {@code /q/metrics} served over real HTTP, the decision, and the Deployments' replicas in
 * fabric8's mock API server (CRUD mode). Round one has no interval yet; round two sees prefill at 2000 prompt tokens/s
 * with 6000 queued (2000 + 6000/10 s = 2600 tokens/s, 3 replicas of 1000) and decode with 24 running and 3 waiting
 * (27 requests, 4 replicas of 8).
 */
@SuppressWarnings("deprecation") // the simpleclient Prometheus registry is the one Quarkus serves /q/metrics with
@EnableKubernetesMockClient(crud = true)
class PlanningRoundKubernetesTest {
  static final String NS = "moemesh";
  static final Profile PROFILE = new Profile(1000, 500, 8, 50, "test");
  KubernetesClient client;
  RecordedReplica prefill;
  RecordedReplica decode;
  SteppedClock clock = new SteppedClock(Instant.parse("2026-12-07T13:00:00Z"));
  PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

  @BeforeEach
  void start() throws Exception {
    prefill = new RecordedReplica().serve("prefill-t0.txt");
    decode = new RecordedReplica().serve("decode-t0.txt");
  }

  @AfterEach
  void stop() {
    prefill.close();
    decode.close();
  }

  void createDeployments(int prefillReplicas, int decodeReplicas) {
    for (Stage stage : Stage.values()) {
      String name = KubernetesConnector.deploymentName(stage);
      client.apps().deployments().inNamespace(NS).resource(new DeploymentBuilder().withNewMetadata().withName(name).endMetadata()
          .withNewSpec().withReplicas(stage == Stage.PREFILL ? prefillReplicas : decodeReplicas)
          .withNewSelector().addToMatchLabels("app.kubernetes.io/name", name).endSelector()
          .withNewTemplate().withNewMetadata().addToLabels("app.kubernetes.io/name", name).endMetadata()
          .withNewSpec().addNewContainer().withName(stage.label()).withImage("moemesh/" + stage.label() + "-svc").endContainer()
          .endSpec().endTemplate().endSpec().build()).create();
    }
  }

  int replicas(Stage stage) {
    return client.apps().deployments().inNamespace(NS).withName(KubernetesConnector.deploymentName(stage)).get().getSpec().getReplicas();
  }

  PlanningRound round(int min, int max, ReplicaDiscovery discovery) {
    var settings = new PlannerSettings(Duration.ofMillis(500), Duration.ofMillis(50), 0.9, new StageBounds(min, max),
        new StageBounds(min, max), Duration.ofSeconds(30), Duration.ofSeconds(60), Duration.ofSeconds(10), 4, 0.5);
    return new PlanningRound(new Planner(settings, PROFILE), discovery, new MetricsScraper(Duration.ofSeconds(5), clock),
        new KubernetesConnector(client, NS), new PlannerMetrics(registry), clock);
  }

  ReplicaDiscovery fixed() {
    return ReplicaDiscovery.fixed(List.of(prefill.metricsUrl()), List.of(decode.metricsUrl()));
  }

  List<Decision> secondRound(PlanningRound round) {
    round.run();
    prefill.serve("prefill-t1.txt");
    decode.serve("decode-t1.txt");
    clock.advance(Duration.ofSeconds(10));
    return round.run();
  }

  @Test
  void scalesEachDeploymentToWhatTheObservedLoadNeeds() {
    createDeployments(1, 1);
    List<Decision> decisions = secondRound(round(1, 8, fixed()));
    assertThat(decisions).extracting(Decision::desired).containsExactly(3, 4);
    assertThat(replicas(Stage.PREFILL)).isEqualTo(3);
    assertThat(replicas(Stage.DECODE)).isEqualTo(4);
    String metrics = registry.scrape();
    assertThat(metrics).contains("moemesh_planner_replicas{kind=\"desired\",stage=\"prefill\",} 3.0")
        .contains("moemesh_planner_replicas{kind=\"actual\",stage=\"prefill\",} 1.0")
        .contains("moemesh_planner_replicas{kind=\"desired\",stage=\"decode\",} 4.0")
        .contains("moemesh_planner_observed_ttft_seconds{quantile=\"0.9\",} 0.75")
        .contains("moemesh_planner_observed_itl_seconds{quantile=\"0.99\",} 0.26")
        .contains("moemesh_planner_observed_queued_prompt_tokens 6000.0");
  }

  @Test
  void theMaximumHolds() {
    createDeployments(1, 1);
    List<Decision> decisions = secondRound(round(1, 2, fixed()));
    assertThat(decisions).extracting(Decision::required).containsExactly(2, 2);
    assertThat(replicas(Stage.PREFILL)).isEqualTo(2);
    assertThat(replicas(Stage.DECODE)).isEqualTo(2);
  }

  @Test
  void aCountOutsideTheBoundsIsBroughtInBeforeAnyInterval() {
    createDeployments(9, 1);
    List<Decision> decisions = round(2, 4, fixed()).run();
    assertThat(decisions).extracting(Decision::reason).containsExactly(Reason.OUT_OF_BOUNDS, Reason.OUT_OF_BOUNDS);
    assertThat(replicas(Stage.PREFILL)).isEqualTo(4);
    assertThat(replicas(Stage.DECODE)).isEqualTo(2);
  }

  @Test
  void findsTheReplicasInTheEndpointsOfTheHeadlessServices() {
    createDeployments(1, 1);
    for (Stage stage : Stage.values()) {
      int port = (stage == Stage.PREFILL ? prefill : decode).metricsUrl().getPort();
      client.endpoints().inNamespace(NS).resource(new EndpointsBuilder().withNewMetadata()
          .withName(KubernetesConnector.deploymentName(stage)).endMetadata()
          .addNewSubset().addNewAddress().withIp("127.0.0.1").endAddress()
          .addNewPort().withName("grpc").withPort(1).endPort().addNewPort().withName("http").withPort(port).endPort()
          .endSubset().build()).create();
    }
    var discovery = new KubernetesDiscovery(client, NS);
    assertThat(discovery.metricsUrls(Stage.PREFILL)).containsExactly(URI.create("http://127.0.0.1:" + prefill.metricsUrl().getPort() + "/q/metrics"));
    List<Decision> decisions = secondRound(round(1, 8, discovery));
    assertThat(decisions).extracting(Decision::desired).containsExactly(3, 4);
    assertThat(replicas(Stage.DECODE)).isEqualTo(4);
  }
}
