package io.moemesh.planner.connect;

import io.moemesh.planner.Stage;
import java.net.URI;
import java.util.List;

/** Where each replica of a stage serves {@code /q/metrics}: fixed addresses, or the Kubernetes endpoints. */
public interface ReplicaDiscovery {
  /** The metrics URLs of the stage's replicas now (e.g. {@code http://10.0.0.7:9200/q/metrics}). */
  List<URI> metricsUrls(Stage stage);

  /** Fixed addresses from config, e.g. {@code bin/moemesh up}'s loopback ports. */
  static ReplicaDiscovery fixed(List<URI> prefill, List<URI> decode) {
    List<URI> p = List.copyOf(prefill), d = List.copyOf(decode);
    return stage -> switch (stage) {
      case PREFILL -> p;
      case DECODE -> d;
    };
  }
}
