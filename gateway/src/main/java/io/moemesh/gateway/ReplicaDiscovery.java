package io.moemesh.gateway;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Where a role's replicas are, from its configured entries: {@code host:port} is one replica; {@code dns:///name:port}
 * is one replica per address {@code name} resolves to — a Kubernetes headless Service gives one per ready pod, so a
 * scaled-out stage is seen pod by pod (one gRPC channel to the Service name would reach one pod). {@link Replicas}
 * resolves the entries again every {@code moemesh.gateway.discovery-interval}.
 */
final class ReplicaDiscovery {
  static final String DNS = "dns:///";

  /** Name resolution, a seam for tests. */
  interface Resolver {
    List<InetAddress> resolve(String host) throws UnknownHostException;

    Resolver SYSTEM = host -> List.of(InetAddress.getAllByName(host));
  }

  private ReplicaDiscovery() {}

  /** One entry checked: {@code host:port} or {@code dns:///host:port}, port in 1..65535; else a message naming it. */
  static void validate(String entry) {
    String target = entry.startsWith(DNS) ? entry.substring(DNS.length()) : entry;
    int colon = target.lastIndexOf(':');
    String port = colon < 0 ? "" : target.substring(colon + 1);
    if (colon <= 0 || !port.matches("\\d{1,5}") || Integer.parseInt(port) < 1 || Integer.parseInt(port) > 65535)
      throw new IllegalArgumentException("replica '" + entry + "' must be host:port or dns:///host:port with a port in 1..65535");
  }

  /**
   * The replica addresses of {@code entries}, in order, without duplicates. {@code lastResolved} holds each
   * {@code dns:///} entry's addresses from the call before and is updated; an entry that does not resolve now keeps
   * those (a DNS hiccup must not empty a pool) and is reported to {@code problems}.
   */
  static Set<String> addresses(List<String> entries, Resolver resolver, Map<String, List<String>> lastResolved,
      Consumer<String> problems) {
    Set<String> out = new LinkedHashSet<>();
    for (String entry : entries) {
      if (!entry.startsWith(DNS)) {
        out.add(entry);
        continue;
      }
      String target = entry.substring(DNS.length());
      int colon = target.lastIndexOf(':');
      String host = target.substring(0, colon), port = target.substring(colon + 1);
      try {
        List<String> resolved = resolver.resolve(host).stream().map(a -> hostPort(a, port)).toList();
        lastResolved.put(entry, resolved);
        out.addAll(resolved);
      } catch (UnknownHostException e) {
        problems.accept("could not resolve " + entry + " (" + e.getMessage() + "); keeping its last addresses");
        out.addAll(lastResolved.getOrDefault(entry, List.of()));
      }
    }
    return out;
  }

  private static String hostPort(InetAddress a, String port) {
    return a instanceof Inet6Address ? "[" + a.getHostAddress() + "]:" + port : a.getHostAddress() + ":" + port;
  }
}
