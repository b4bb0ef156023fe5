package io.moemesh.gateway;

import io.moemesh.proto.auth.MeshChannels;
import io.grpc.stub.StreamObserver;
import io.moemesh.proto.common.v1.LoadReport;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.decode.v1.DecodeGrpc;
import io.moemesh.proto.prefill.v1.PrefillGrpc;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.random.RandomGenerator;
import java.util.stream.Stream;
import org.jboss.logging.Logger;

/**
 * The configured replicas, one channel each, and the routing choice: prefill = the longest known prompt prefix within a
 * load margin, else least queued prompt tokens ({@link PrefixAffinity}); decode = the less loaded of two replicas
 * drawn at random ({@link #leastLoaded}), by streams counted at dispatch, so a burst spreads before any poll
 * reports it. A background poller calls every replica's {@code Load};
 * a replica counts as reachable while its polls answer (one UNAVAILABLE or three slow ones in a row take it out),
 * and unreachable ones are skipped — but for slow ones when a role has nothing else (a busy replica, not a 503). The pools come from
 * {@link ReplicaDiscovery}: {@code dns:///name:port} entries are resolved again every discovery interval.
 */
@Singleton
public class Replicas {
  private static final Logger LOG = Logger.getLogger(Replicas.class);
  private static final LoadReportRequest LOAD = LoadReportRequest.getDefaultInstance();
  private final List<String> prefillEntries, decodeEntries;
  private final ReplicaDiscovery.Resolver resolver;
  private final Map<String, List<String>> lastResolved = new ConcurrentHashMap<>();
  private volatile List<Replica> prefill = List.of();
  private volatile List<Replica> decode = List.of();
  private final PrefixAffinity prefixes;
  private final long loadTimeoutMs;
  private final ScheduledExecutorService poller = Executors.newSingleThreadScheduledExecutor(
      Thread.ofPlatform().name("replica-load-poller").daemon().factory());

  @Inject
  Replicas(GatewayConfig config) {
    this(config, ReplicaDiscovery.Resolver.SYSTEM);
  }

  Replicas(GatewayConfig config, ReplicaDiscovery.Resolver resolver) {
    this.prefillEntries = entries(config.prefill().replicas().orElse(List.of()));
    this.decodeEntries = entries(config.decode().replicas().orElse(List.of()));
    this.resolver = resolver;
    var routing = config.prefixRouting();
    this.prefixes = new PrefixAffinity(routing.blockTokens(), routing.blocksPerReplica(), routing.maxImbalance());
    this.loadTimeoutMs = config.loadTimeout().toMillis();
    discover();
    long every = config.loadPollInterval().toMillis(), discoverEvery = config.discoveryInterval().toMillis();
    poller.scheduleWithFixedDelay(this::pollAll, 0, every, TimeUnit.MILLISECONDS);
    poller.scheduleWithFixedDelay(this::discover, discoverEvery, discoverEvery, TimeUnit.MILLISECONDS);
  }

  private static List<String> entries(List<String> configured) {
    List<String> entries = configured.stream().map(String::trim).filter(a -> !a.isEmpty()).toList();
    entries.forEach(ReplicaDiscovery::validate);
    return entries;
  }

  /** Resolves the configured entries again: new addresses become replicas, gone ones are closed (calls in flight finish). */
  synchronized void discover() {
    try {
      prefill = refresh(Replica.Role.PREFILL, prefillEntries, prefill);
      decode = refresh(Replica.Role.DECODE, decodeEntries, decode);
    } catch (RuntimeException e) { // the next round tries again; the pools stay as they were
      LOG.warnf(e, "replica discovery failed");
    }
  }

  private List<Replica> refresh(Replica.Role role, List<String> entries, List<Replica> current) {
    Set<String> wanted = ReplicaDiscovery.addresses(entries, resolver, lastResolved, LOG::warn);
    Map<String, Replica> byAddress = new HashMap<>();
    for (Replica r : current) byAddress.put(r.address(), r);
    List<Replica> next = wanted.stream().map(a -> byAddress.containsKey(a) ? byAddress.get(a)
        : new Replica(role, a, MeshChannels.builder(a).build())).toList();
    for (Replica r : current) {
      if (wanted.contains(r.address())) continue;
      LOG.infof("%s replica %s is gone from discovery", role.name().toLowerCase(java.util.Locale.ROOT), r.address());
      prefixes.forget(r);
      r.channel().shutdown();
    }
    for (Replica r : next) if (!byAddress.containsKey(r.address()) && !current.isEmpty())
      LOG.infof("%s replica %s discovered", role.name().toLowerCase(java.util.Locale.ROOT), r.address());
    return next;
  }

  /** The prefill replica for {@code prompt} ({@link PrefixAffinity}); empty if none is configured or reachable. */
  Optional<PrefixAffinity.Choice> pickPrefill(int[] prompt) {
    return prefixes.pick(prefill, prompt);
  }

  boolean anyPrefillReachable() {
    return !routable(prefill).isEmpty();
  }

  /** The reachable replicas; if there are none, the {@linkplain Replica#slow slow} ones (busy, not known dead). */
  static List<Replica> routable(List<Replica> replicas) {
    List<Replica> reachable = replicas.stream().filter(Replica::reachable).toList();
    return reachable.isEmpty() ? replicas.stream().filter(Replica::slow).toList() : reachable;
  }

  /** The decode replica for a new stream ({@link #leastLoaded}); 503 if none is reachable. */
  Replica pickDecode(java.time.Duration retryAfter) {
    return leastLoaded(decode, ThreadLocalRandom.current()).orElseThrow(() -> ApiError.unavailable(
        "No decode replica is reachable (" + decode.size() + " configured); retry later", retryAfter));
  }

  /** Prefill routing: least queued prompt tokens (reported + sent since), among the reachable. */
  static Optional<Replica> leastQueued(List<Replica> replicas) {
    return routable(replicas).stream().min(Comparator.comparingLong(Replica::queuedPromptTokens));
  }

  /** KV-cache usage from which a decode replica is passed over while another has room. */
  static final double KV_NEARLY_FULL = 0.95;

  /**
   * Decode routing, power of two choices: of two distinct replicas drawn at random among the reachable ones with KV
   * room (all reachable ones if none has), the one with fewer streams ({@link Replica#decodeStreams}, counted at
   * dispatch). Two random choices keep many gateways with the same stale view from herding onto one replica.
   */
  static Optional<Replica> leastLoaded(List<Replica> replicas, RandomGenerator random) {
    List<Replica> live = routable(replicas);
    List<Replica> roomy = live.stream().filter(Replicas::hasKvRoom).toList();
    List<Replica> pool = roomy.isEmpty() ? live : roomy;
    if (pool.size() <= 1) return pool.stream().findFirst();
    int i = random.nextInt(pool.size()), j = random.nextInt(pool.size() - 1);
    Replica a = pool.get(i), b = pool.get(j >= i ? j + 1 : j);
    return Optional.of(b.decodeStreams() < a.decodeStreams() ? b : a);
  }

  boolean anyDecodeReachable() {
    return !routable(decode).isEmpty();
  }

  /** Whether a decode replica's last report leaves room for a new stream's KV (usage below {@link #KV_NEARLY_FULL}). */
  static boolean hasKvRoom(Replica r) {
    return r.load().getKvCacheUsage() < KV_NEARLY_FULL;
  }

  /**
   * Whether some routable decode replica has KV room. When none has, a new stream would only wait inside a replica for
   * others to finish, with no bound the gateway can see: admission answers 429 instead.
   */
  boolean anyDecodeHasKvRoom() {
    return routable(decode).stream().anyMatch(Replicas::hasKvRoom);
  }

  /** The lowest KV usage the routable decode replicas report, for the refusal's message. */
  double leastDecodeKvUsage() {
    return routable(decode).stream().mapToDouble(r -> r.load().getKvCacheUsage()).min().orElse(Double.NaN);
  }

  List<Replica> all() {
    return Stream.concat(prefill.stream(), decode.stream()).toList();
  }

  private void pollAll() {
    for (Replica r : all()) {
      if (!r.startPoll()) continue;
      // a channel to an address where nothing listened backs off up to minutes: a replica that starts there (scaled
      // up, restarted) would wait that long; each poll tries it afresh (a new replica was first used 11-37 s after ready)
      if (!r.reachable()) r.channel().resetConnectBackoff();
      StreamObserver<LoadReport> answer = new StreamObserver<>() {
        @Override public void onNext(LoadReport report) { r.polled(report); }
        @Override public void onError(Throwable t) { r.pollFailed(io.grpc.Status.fromThrowable(t).getCode()); }
        @Override public void onCompleted() {}
      };
      try {
        if (r.role() == Replica.Role.PREFILL) {
          PrefillGrpc.newStub(r.channel()).withDeadlineAfter(loadTimeoutMs, TimeUnit.MILLISECONDS).load(LOAD, answer);
        } else {
          DecodeGrpc.newStub(r.channel()).withDeadlineAfter(loadTimeoutMs, TimeUnit.MILLISECONDS).load(LOAD, answer);
        }
      } catch (RuntimeException e) {
        r.pollFailed(io.grpc.Status.Code.UNAVAILABLE);
      }
    }
  }

  @PreDestroy
  void close() {
    poller.shutdownNow();
    for (Replica r : all()) r.channel().shutdownNow();
  }
}
