package io.moemesh.gateway;

import io.grpc.Metadata;
import io.grpc.stub.MetadataUtils;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.decode.v1.DecodeGrpc;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.decode.v1.GenerateResponse;
import io.moemesh.proto.prefill.v1.PrefillGrpc;
import io.moemesh.proto.prefill.v1.PrefillRequest;
import io.moemesh.proto.prefill.v1.PrefillResponse;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Runs one choice on the mesh (docs/architecture.md, "Prefill/decode disaggregation"):
 * <pre>
 *   disaggregated:  Prefill(prompt) on a prefill replica ─▶ first token to the client at once
 *                   ─▶ (unless it finished the request) Generate(ticket, first token, sampled draws)
 *                      on a decode replica
 *   otherwise:      Generate(prompt) on a decode replica (no ticket: decode computes the prompt)
 * </pre>
 * Replicas are picked when a leg starts; a replica that answers UNAVAILABLE before producing anything is skipped
 * and the leg retried elsewhere. A choice whose decode replica is lost after tokens went downstream (UNAVAILABLE, the
 * drain marker, a stream closed without a finish reason) continues on another replica: prompt + the tokens delivered,
 * through both legs again, the same stream downstream ({@link ChoiceProgress}; at most {@code max-migrations} times). Cancelling the returned Multi cancels whichever call is open; if that happens after
 * the prefill answered but before decode did, or the decode leg fails first, the ticket's object is released (no
 * decode replica will load it). Every RPC carries a deadline and the request id as {@code x-request-id} metadata,
 * and is traced as a child of the request's span ({@link BackendCall#tracing}: W3C {@code traceparent} in the metadata).
 */
@Singleton
public class Orchestrator {
  static final Metadata.Key<String> REQUEST_ID = Metadata.Key.of("x-request-id", Metadata.ASCII_STRING_MARSHALLER);

  private final Replicas replicas;
  private final TicketReleaser tickets;
  private final GatewayMetrics metrics;
  private final boolean disaggregation;
  private final Duration prefillDeadline;
  private final Duration decodeDeadline;
  private final Duration retryAfter;
  private final int retries;
  private final int maxMigrations;
  private static final org.jboss.logging.Logger LOG = org.jboss.logging.Logger.getLogger(Orchestrator.class);

  Orchestrator(Replicas replicas, GatewayConfig config, TicketReleaser tickets, GatewayMetrics metrics) {
    this.replicas = replicas;
    this.metrics = metrics;
    this.tickets = tickets;
    this.disaggregation = config.disaggregation();
    this.prefillDeadline = config.prefillDeadline();
    this.decodeDeadline = config.decodeDeadline();
    this.retryAfter = config.retryAfter();
    this.retries = config.unavailableRetries();
    this.maxMigrations = config.maxMigrations();
  }

  Multi<BackendChunk> generate(BackendCall call) {
    return run(new ChoiceProgress(call, maxMigrations), call);
  }

  /** One attempt at the choice (the call, or a continuation of it); a lost replica continues it on another. */
  private Multi<BackendChunk> run(ChoiceProgress progress, BackendCall call) {
    return attempt(call).onItem().transform(progress::delivered)
        .onCompletion().switchTo(() -> progress.finished() ? Multi.createFrom().empty()
            : Multi.createFrom().failure(new BackendException.Unfinished()))
        .onFailure(t -> progress.migratable(t).isPresent()).recoverWithMulti(t -> migrate(progress, call, t));
  }

  private Multi<BackendChunk> migrate(ChoiceProgress progress, BackendCall failed, Throwable failure) {
    MigrationReason reason = progress.migratable(failure).orElseThrow();
    int done = progress.numDelivered();
    metrics.migrated(reason);
    failed.migrations().migrated(failed.rpcId(), reason, done);
    LOG.infof("request %s (%s) continues on another decode replica after %d tokens (%s: %s)", failed.rpcId(),
        failed.correlationId(), done, reason.label(), ProtoMapping.withoutAddresses(failure.getMessage()));
    if (progress.remaining() <= 0) { // the last token arrived, its finish did not: the budget is spent
      return Multi.createFrom().item(new BackendChunk(List.of(), FinishReason.FINISH_REASON_LENGTH, null));
    }
    long failedAt = System.nanoTime();
    AtomicBoolean resumed = new AtomicBoolean();
    return run(progress, progress.migrate()).onItem().invoke(chunk -> {
      if (!chunk.tokens().isEmpty() && resumed.compareAndSet(false, true)) metrics.resumed(Duration.ofNanos(System.nanoTime() - failedAt));
    });
  }

  /** Prefill then decode, or decode alone. */
  private Multi<BackendChunk> attempt(BackendCall call) {
    return Multi.createFrom().deferred(() -> {
      boolean prefill = disaggregation && replicas.anyPrefillReachable();
      return prefill ? prefill(call).onItem().transformToMulti(r -> afterPrefill(call, r)) : decode(call, null);
    });
  }

  /** The prefill leg; a replica found UNAVAILABLE is skipped and the call goes to the next one. */
  private Uni<PrefillResponse> prefill(BackendCall call) {
    return Uni.createFrom().deferred(() -> {
      PrefixAffinity.Choice choice = replicas.pickPrefill(call.promptIds()).orElseThrow(() -> ApiError.unavailable(
          "No prefill replica is reachable; retry later", retryAfter));
      metrics.prefillRouted(choice);
      Replica replica = choice.replica();
      PrefillRequest request = PrefillRequest.newBuilder().setRequestId(call.rpcId())
          .addAllPromptTokenIds(ids(call.promptIds())).setSampling(call.sampling()).build();
      var stub = PrefillGrpc.newStub(replica.channel())
          .withDeadlineAfter(prefillDeadline.toMillis(), TimeUnit.MILLISECONDS)
          .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(metadata(call)), call.tracing());
      int promptTokens = call.promptIds().length;
      return GrpcCalls.<PrefillRequest, PrefillResponse>unary(request, stub::prefill)
          .onSubscription().invoke(() -> replica.started(promptTokens))
          .onTermination().invoke(() -> replica.ended(promptTokens))
          .onFailure().invoke(t -> markIfUnavailable(replica, t));
    }).onFailure(Orchestrator::unavailable).retry().atMost(retries);
  }

  private Multi<BackendChunk> afterPrefill(BackendCall call, PrefillResponse response) {
    BackendChunk first = new BackendChunk(List.of(response.getFirstToken()), response.getFinishReason(),
        response.hasUsage() ? response.getUsage() : null);
    if (first.finished()) return Multi.createFrom().item(first);
    if (call.maxTokens() <= 1) return Multi.createFrom().item(first.withFinish(FinishReason.FINISH_REASON_LENGTH));
    if (!response.hasTicket()) {
      return Multi.createFrom().failure(
          new BackendException("prefill returned neither a KV ticket nor a finish reason"));
    }
    // concatenation subscribes to decode only once the first token has gone downstream
    AtomicBoolean decoded = new AtomicBoolean(); // a decode replica that answered has loaded (and released) the object
    return Multi.createBy().concatenating()
        .streams(Multi.createFrom().item(first), decode(call, response).onItem().invoke(() -> decoded.set(true)))
        .onTermination().invoke((failure, cancelled) -> {
          if ((failure != null || cancelled) && !decoded.get()) tickets.release(response.getTicket(), metadata(call));
        });
  }

  /**
   * The decode leg, with the prefill's ticket or without (then decode computes the prompt). A replica found
   * UNAVAILABLE before it sent a token is skipped and the leg starts over on the next one (the ticket stays valid:
   * the object is only released once a decode replica loaded it).
   */
  private Multi<BackendChunk> decode(BackendCall call, PrefillResponse prefilled) {
    AtomicBoolean anyToken = new AtomicBoolean();
    return Multi.createFrom().deferred(() -> {
      Replica replica = replicas.pickDecode(retryAfter);
      GenerateRequest.Builder request = GenerateRequest.newBuilder().setRequestId(call.rpcId())
          .addAllPromptTokenIds(ids(call.promptIds())).setSampling(call.sampling()).setMaxTokens(call.maxTokens());
      if (prefilled != null) {
        request.setTicket(prefilled.getTicket()).setFirstToken(prefilled.getFirstToken())
            .setSampledDraws(prefilled.getSampledDraws()).addAllDraftTokenIds(prefilled.getDraftTokenIdsList());
      }
      var stub = DecodeGrpc.newStub(replica.channel())
          .withDeadlineAfter(decodeDeadline.toMillis(), TimeUnit.MILLISECONDS)
          .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(metadata(call)), call.tracing());
      int promptTokens = prefilled == null ? call.promptIds().length : 0;
      return GrpcCalls.<GenerateRequest, GenerateResponse>serverStream(request.build(), stub::generate)
          .onSubscription().invoke(() -> replica.started(promptTokens))
          .onTermination().invoke(() -> replica.ended(promptTokens))
          .onFailure().invoke(t -> markIfUnavailable(replica, t));
    }).onItem().invoke(() -> anyToken.set(true))
        .onFailure(t -> !anyToken.get() && unavailable(t)).retry().atMost(retries)
        .onItem().transform(Orchestrator::chunk);
  }

  private static BackendChunk chunk(GenerateResponse r) {
    switch (r.getFinishReason()) {
      case FINISH_REASON_ERROR -> throw new BackendException("decode failed: " + r.getError());
      case FINISH_REASON_ABORT -> throw new BackendException("decode aborted the request" + suffix(r.getError()));
      default -> { }
    }
    return new BackendChunk(r.getTokensList(), r.getFinishReason(), r.hasUsage() ? r.getUsage() : null);
  }

  private static String suffix(String error) {
    return error.isEmpty() ? "" : ": " + error;
  }

  private static boolean unavailable(Throwable t) {
    return MigrationReason.connectionLost(t);
  }

  private static void markIfUnavailable(Replica replica, Throwable t) {
    if (unavailable(t)) replica.markUnreachable();
  }

  private static Metadata metadata(BackendCall call) {
    Metadata md = new Metadata();
    md.put(REQUEST_ID, call.correlationId());
    return md;
  }

  private static List<Integer> ids(int[] ids) {
    return java.util.Arrays.stream(ids).boxed().toList();
  }
}
