package io.moemesh.planner.connect;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.moemesh.planner.Stage;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The Role in deploy/k8s/planner/rbac.yaml grants every call the connector and discovery make, and the test would see a
 * call it does not grant: each request the mock API server received is turned into the (API group, resource,
 * subresource, name, verb) that Kubernetes authorizes, and checked against the Role's rules.
 */
@EnableKubernetesMockClient(crud = true)
class RbacCoversTheConnectorTest {
  static final Path RBAC = Path.of("..", "deploy", "k8s", "planner", "rbac.yaml");
  KubernetesMockServer server;
  KubernetesClient client;

  record Access(String apiGroup, String resource, String name, String verb) {}

  @Test
  void everyCallOfARoundIsGrantedByTheRole() throws Exception {
    for (Stage stage : Stage.values()) {
      client.apps().deployments().inNamespace("moemesh").resource(KubernetesConnectorTest.deployment(stage, 1)).create();
    }
    int setUpRequests = server.getRequestCount();
    var connector = new KubernetesConnector(client, "moemesh");
    var discovery = new KubernetesDiscovery(client, "moemesh");
    for (Stage stage : Stage.values()) {
      discovery.metricsUrls(stage);
      connector.scale(stage, connector.replicas(stage) + 1);
    }
    List<Access> accesses = new ArrayList<>();
    for (int i = 0; i < server.getRequestCount(); i++) {
      var request = server.takeRequest(5, TimeUnit.SECONDS);
      if (i >= setUpRequests) accesses.add(access(request.getMethod(), request.getPath()));
    }
    assertThat(accesses).contains(new Access("apps", "deployments/scale", "moemesh-prefill", "update"),
        new Access("", "endpoints", "moemesh-decode", "get"));
    List<PolicyRule> rules = role().getRules();
    for (Access a : accesses) assertThat(rules.stream().anyMatch(r -> grants(r, a))).as("the Role grants " + a).isTrue();
  }

  @Test
  void theRoleGrantsNothingOnTheDeploymentsThemselves() throws IOException {
    for (PolicyRule rule : role().getRules()) {
      assertThat(rule.getResources()).doesNotContain("deployments", "*");
      assertThat(rule.getVerbs()).doesNotContain("create", "delete", "*");
    }
  }

  private Role role() throws IOException {
    try (InputStream in = Files.newInputStream(RBAC)) {
      List<HasMetadata> items = client.load(in).items();
      return items.stream().filter(Role.class::isInstance).map(Role.class::cast).findFirst().orElseThrow();
    }
  }

  /** {@code /apis/apps/v1/namespaces/ns/deployments/x/scale} → (apps, deployments/scale, x); {@code /api/v1/...} is the core group. */
  static Access access(String method, String path) {
    String[] parts = path.replaceFirst("\\?.*", "").split("/");
    boolean core = parts[1].equals("api");
    int nsIndex = core ? 3 : 4;
    assertThat(parts[nsIndex]).as(path).isEqualTo("namespaces");
    String group = core ? "" : parts[2];
    String resource = parts[nsIndex + 2];
    String name = parts.length > nsIndex + 3 ? parts[nsIndex + 3] : null;
    if (parts.length > nsIndex + 4) resource += "/" + parts[nsIndex + 4];
    String verb = switch (method) {
      case "GET" -> name == null ? "list" : "get";
      case "PUT" -> "update";
      case "PATCH" -> "patch";
      case "POST" -> "create";
      case "DELETE" -> "delete";
      default -> throw new AssertionError(method + " " + path);
    };
    return new Access(group, resource, name, verb);
  }

  static boolean grants(PolicyRule rule, Access a) {
    return rule.getApiGroups().contains(a.apiGroup()) && rule.getResources().contains(a.resource())
        && rule.getVerbs().contains(a.verb())
        && (rule.getResourceNames() == null || rule.getResourceNames().isEmpty() || rule.getResourceNames().contains(a.name()));
  }
}
