package io.moemesh.gateway;

import io.grpc.ManagedChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.moemesh.proto.common.v1.LoadReport;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.decode.v1.DecodeGrpc;
import io.moemesh.proto.prefill.v1.PrefillGrpc;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The configured replicas, one channel each, and the routing choice: prefill = the longest known prompt prefix within a
 * load margin, else least queued prompt tokens ({@link PrefixAffinity}); decode =
 * lowest KV-cache usage, then fewest running requests. A background poller calls every replica's {@code Load};
 * a replica counts as reachable while its last poll answered, and unreachable ones are skipped.
 */
@Singleton
public class Replicas {
  private static final LoadReportRequest LOAD = LoadReportRequest.getDefaultInstance();
  private final List<Replica> prefill;
  private final List<Replica> decode;
  private final PrefixAffinity prefixes;
  private final long loadTimeoutMs;
  private final ScheduledExecutorService poller = Executors.newSingleThreadScheduledExecutor(
      Thread.ofPlatform().name("replica-load-poller").daemon().factory());

  Replicas(GatewayConfig config) {
    this.prefill = build(Replica.Role.PREFILL, config.prefill().replicas().orElse(List.of()));
    this.decode = build(Replica.Role.DECODE, config.decode().replicas().orElse(List.of()));
    var routing = config.prefixRouting();
    this.prefixes = new PrefixAffinity(routing.blockTokens(), routing.blocksPerReplica(), routing.maxImbalance());
    this.loadTimeoutMs = config.loadTimeout().toMillis();
    long every = config.loadPollInterval().toMillis();
    poller.scheduleWithFixedDelay(this::pollAll, 0, every, TimeUnit.MILLISECONDS);
  }

  private static List<Replica> build(Replica.Role role, List<String> addresses) {
    return addresses.stream().map(String::trim).filter(a -> !a.isEmpty())
        .map(a -> new Replica(role, a, ManagedChannelBuilder.forTarget(a).usePlaintext().build())).toList();
  }

  /** The prefill replica for {@code prompt} ({@link PrefixAffinity}); empty if none is configured or reachable. */
  Optional<PrefixAffinity.Choice> pickPrefill(int[] prompt) {
    return prefixes.pick(prefill, prompt);
  }

  boolean anyPrefillReachable() {
    return prefill.stream().anyMatch(Replica::reachable);
  }

  /** The decode replica with the most KV room, then the fewest running requests; 503 if none is reachable. */
  Replica pickDecode(java.time.Duration retryAfter) {
    return mostRoom(decode).orElseThrow(() -> ApiError.unavailable(
        "No decode replica is reachable (" + decode.size() + " configured); retry later", retryAfter));
  }

  /** Prefill routing: least queued prompt tokens (reported + sent since), among the reachable. */
  static Optional<Replica> leastQueued(List<Replica> replicas) {
    return replicas.stream().filter(Replica::reachable).min(Comparator.comparingLong(Replica::queuedPromptTokens));
  }

  /** Decode routing: lowest KV-cache usage, then fewest running requests (reported + sent since). */
  static Optional<Replica> mostRoom(List<Replica> replicas) {
    return replicas.stream().filter(Replica::reachable)
        .min(Comparator.comparingDouble((Replica r) -> r.load().getKvCacheUsage())
            .thenComparingInt(Replica::runningRequests));
  }

  boolean anyDecodeReachable() {
    return decode.stream().anyMatch(Replica::reachable);
  }

  List<Replica> all() {
    return Stream.concat(prefill.stream(), decode.stream()).toList();
  }

  private void pollAll() {
    for (Replica r : all()) {
      if (!r.startPoll()) continue;
      StreamObserver<LoadReport> answer = new StreamObserver<>() {
        @Override public void onNext(LoadReport report) { r.polled(report); }
        @Override public void onError(Throwable t) { r.pollFailed(); }
        @Override public void onCompleted() {}
      };
      try {
        if (r.role() == Replica.Role.PREFILL) {
          PrefillGrpc.newStub(r.channel()).withDeadlineAfter(loadTimeoutMs, TimeUnit.MILLISECONDS).load(LOAD, answer);
        } else {
          DecodeGrpc.newStub(r.channel()).withDeadlineAfter(loadTimeoutMs, TimeUnit.MILLISECONDS).load(LOAD, answer);
        }
      } catch (RuntimeException e) {
        r.pollFailed();
      }
    }
  }

  @PreDestroy
  void close() {
    poller.shutdownNow();
    for (Replica r : all()) r.channel().shutdownNow();
  }
}
