package io.moemesh.planner.connect;

import io.fabric8.kubernetes.api.model.EndpointAddress;
import io.fabric8.kubernetes.api.model.EndpointPort;
import io.fabric8.kubernetes.api.model.EndpointSubset;
import io.fabric8.kubernetes.api.model.Endpoints;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.moemesh.planner.Stage;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * The replicas of a stage from the Endpoints of its headless Service ({@code moemesh-prefill}, {@code moemesh-decode}
 * in deploy/k8s/base): every ready address, at the port named {@code http}. Not-ready pods (loading their model) are
 * left out, as the gateway leaves them out.
 */
public final class KubernetesDiscovery implements ReplicaDiscovery {
  private static final String PORT_NAME = "http";
  private final KubernetesClient client;
  private final String namespace;

  public KubernetesDiscovery(KubernetesClient client, String namespace) {
    this.client = client;
    this.namespace = namespace;
  }

  @Override
  public List<URI> metricsUrls(Stage stage) {
    String service = KubernetesConnector.deploymentName(stage);
    Endpoints endpoints;
    try {
      endpoints = client.endpoints().inNamespace(namespace).withName(service).get();
    } catch (KubernetesClientException e) {
      throw new ConnectorException(stage, "reading the endpoints of " + namespace + "/" + service, e);
    }
    List<URI> urls = new ArrayList<>();
    if (endpoints == null || endpoints.getSubsets() == null) return urls;
    for (EndpointSubset subset : endpoints.getSubsets()) {
      Integer port = null;
      for (EndpointPort p : subset.getPorts()) if (PORT_NAME.equals(p.getName())) port = p.getPort();
      if (port == null || subset.getAddresses() == null) continue;
      for (EndpointAddress address : subset.getAddresses()) {
        String host = address.getIp().contains(":") ? "[" + address.getIp() + "]" : address.getIp();
        urls.add(URI.create("http://" + host + ":" + port + "/q/metrics"));
      }
    }
    return urls;
  }
}
