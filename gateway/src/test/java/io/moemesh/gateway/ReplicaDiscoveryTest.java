package io.moemesh.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Replica entries to addresses, with a scripted resolver. */
class ReplicaDiscoveryTest {
  final Map<String, List<InetAddress>> dns = new HashMap<>();
  final ReplicaDiscovery.Resolver resolver = host -> {
    List<InetAddress> a = dns.get(host);
    if (a == null) throw new UnknownHostException(host + ": no such name");
    return a;
  };
  final Map<String, List<String>> last = new HashMap<>();
  final List<String> problems = new ArrayList<>();

  static InetAddress ip(String literal) throws UnknownHostException {
    return InetAddress.getByName(literal); // a literal: no lookup
  }

  @Test
  void aHeadlessServiceNameIsOneReplicaPerAddressAndPlainEntriesStayAsTheyAre() throws Exception {
    dns.put("moemesh-decode", List.of(ip("10.0.0.7"), ip("10.0.0.9"), ip("fd00::3")));
    assertThat(ReplicaDiscovery.addresses(List.of("dns:///moemesh-decode:9301", "decode-0.local:9301", "10.0.0.7:9301"), resolver, last,
        problems::add)).containsExactly("10.0.0.7:9301", "10.0.0.9:9301", "[fd00:0:0:0:0:0:0:3]:9301", "decode-0.local:9301");
    assertThat(problems).isEmpty();
  }

  @Test
  void podsComingAndGoingChangeTheAddressesAndAFailedLookupKeepsTheLastOnes() throws Exception {
    List<String> entries = List.of("dns:///moemesh-prefill:9201");
    dns.put("moemesh-prefill", List.of(ip("10.0.0.1")));
    assertThat(ReplicaDiscovery.addresses(entries, resolver, last, problems::add)).containsExactly("10.0.0.1:9201");
    dns.put("moemesh-prefill", List.of(ip("10.0.0.1"), ip("10.0.0.2")));
    assertThat(ReplicaDiscovery.addresses(entries, resolver, last, problems::add)).containsExactly("10.0.0.1:9201", "10.0.0.2:9201");
    dns.put("moemesh-prefill", List.of(ip("10.0.0.2")));
    assertThat(ReplicaDiscovery.addresses(entries, resolver, last, problems::add)).containsExactly("10.0.0.2:9201");
    dns.remove("moemesh-prefill");
    assertThat(ReplicaDiscovery.addresses(entries, resolver, last, problems::add)).containsExactly("10.0.0.2:9201");
    assertThat(problems).singleElement().asString().contains("could not resolve dns:///moemesh-prefill:9201", "keeping its last addresses");
  }

  @Test
  void malformedEntriesAreRejectedByName() {
    for (String bad : List.of("decode", "decode:", ":9301", "decode:http", "decode:70000", "dns:///decode", "dns:///decode:0"))
      assertThatThrownBy(() -> ReplicaDiscovery.validate(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
          .hasMessage("replica '" + bad + "' must be host:port or dns:///host:port with a port in 1..65535");
    ReplicaDiscovery.validate("dns:///moemesh-decode:9301");
    ReplicaDiscovery.validate("[::1]:9301");
  }
}
