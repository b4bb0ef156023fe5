package io.moemesh.decode;

import io.moemesh.enginehost.ProtoMapping;
import io.grpc.Status;
import io.moemesh.engine.GenerationRequest;
import io.moemesh.engine.KvHandoff;
import io.moemesh.engine.RequestOutput;
import io.moemesh.enginehost.Drain;
import io.moemesh.enginehost.EngineHost;
import io.moemesh.enginehost.EngineMetrics;
import io.moemesh.proto.common.v1.LoadReport;
import io.moemesh.proto.common.v1.DrainRequest;
import io.moemesh.proto.common.v1.DrainResponse;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.drain.DrainMarker;
import io.moemesh.proto.decode.v1.Decode;
import io.moemesh.proto.decode.v1.GenerateRequest;
import io.moemesh.proto.decode.v1.GenerateResponse;
import io.moemesh.proto.decode.v1.LoadFailurePolicy;
import io.quarkus.grpc.GrpcService;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.subscription.MultiEmitter;
import jakarta.inject.Inject;

/**
 * Decode over gRPC: adapts the wire to the engine and back, nothing else. Tokens go out as the engine's step
 * loop produces them (the emitter is thread-safe); a cancelled call aborts the request in whatever state, and
 * a ticket whose KV was not loaded yet is given up (the load cancelled, the object released). While the replica drains
 * ({@link Drain}) new requests and Load answer UNAVAILABLE with the drain marker, and a stream still running at the
 * drain's timeout ends so too: its gateway continues it on another replica.
 */
@GrpcService
public class DecodeService implements Decode {
  @Inject EngineHost host;
  @Inject StoreKvConnector connector;
  @Inject EngineMetrics metrics;
  @Inject Drain drain;
  @Inject DecodeDrain drainSettings;

  @Inject DecodeConfig config;

  @Override
  public Multi<GenerateResponse> generate(GenerateRequest request) {
    return Multi.createFrom().emitter(emitter -> {
      if (drain.draining()) {
        emitter.fail(DrainMarker.unavailable("decode replica draining: it takes no new request"));
        return;
      }
      GenerationRequest spec;
      try {
        spec = toEngine(request);
      } catch (IllegalArgumentException e) {
        emitter.fail(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
        return;
      }
      var engine = host.engine();
      if (request.hasTicket()) connector.expect(spec.id(), request.getTicket());
      try {
        // with a ticket, the prefill replica produced (and counted) the request's first token
        var leg = request.hasTicket() ? EngineMetrics.Leg.AFTER_FIRST_TOKEN : EngineMetrics.Leg.WHOLE;
        engine.submit(spec, metrics.timed(output -> emit(emitter, output), leg));
      } catch (IllegalArgumentException e) {
        connector.abandon(spec.id());
        emitter.fail(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
        return;
      }
      Drain.Call inFlight = drain.track(() -> emitter.fail(DrainMarker.unavailable(
          "decode replica drained: request " + spec.id() + " was still running at the drain timeout")));
      // after the submit: a call cancelled before it runs this at once, so the abort follows the request in
      emitter.onTermination(() -> {
        engine.abort(spec.id()); // a no-op once finished
        connector.abandon(spec.id());
        inFlight.close();
      });
    });
  }

  private static void emit(MultiEmitter<? super GenerateResponse> emitter, RequestOutput out) {
    var b = GenerateResponse.newBuilder().addAllTokens(ProtoMapping.tokens(out.newTokens())).setUsage(ProtoMapping.usage(out.usage()));
    if (out.finished()) {
      b.setFinishReason(ProtoMapping.finishReason(out.status()));
      if (out.error() != null) b.setError(out.error());
    }
    emitter.emit(b.build());
    if (out.finished()) emitter.complete();
  }

  private GenerationRequest toEngine(GenerateRequest r) {
    int[] prompt = r.getPromptTokenIdsList().stream().mapToInt(Integer::intValue).toArray();
    KvHandoff handoff = KvHandoff.LOCAL;
    if (r.hasTicket()) {
      if (!r.hasFirstToken()) throw new IllegalArgumentException("a request with a KV ticket needs the prefill's first_token");
      String store = r.getTicket().getStoreAddress();
      if (config.kvStores().isPresent() && !config.kvStores().get().contains(store))
        throw new IllegalArgumentException("the ticket names kv-store " + store + ", which this replica does not read from"
            + " (moemesh.decode.kv-stores)");
      if (r.getTicket().getNumTokens() != prompt.length)
        throw new IllegalArgumentException("the ticket holds " + r.getTicket().getNumTokens() + " tokens but the prompt has " + prompt.length);
      // a speculating prefill stored the MTP layer after the main model's: with it this engine drafts from the first step
      boolean withMtpKv = r.getTicket().getLayout().getNumLayers() > host.loaded().config().numHiddenLayers();
      if (!withMtpKv && r.getDraftTokenIdsCount() > 0)
        throw new IllegalArgumentException("draft_token_ids come with a ticket whose KV holds the MTP layer, but this one has "
            + r.getTicket().getLayout().getNumLayers() + " layers");
      handoff = new KvHandoff.Import(ProtoMapping.token(r.getFirstToken()), r.getSampledDraws(), onLoadFailure(r.getOnLoadFailure()),
          withMtpKv, r.getDraftTokenIdsList());
    }
    return new GenerationRequest(r.getRequestId(), prompt, ProtoMapping.sampling(r.getSampling()), r.getMaxTokens(), r.getPriority(), handoff);
  }

  private KvHandoff.OnLoadFailure onLoadFailure(LoadFailurePolicy p) {
    return switch (p) {
      case LOAD_FAILURE_POLICY_FAIL -> KvHandoff.OnLoadFailure.FAIL;
      case LOAD_FAILURE_POLICY_RECOMPUTE -> KvHandoff.OnLoadFailure.RECOMPUTE;
      case LOAD_FAILURE_POLICY_UNSPECIFIED, UNRECOGNIZED -> config.onLoadFailure();
    };
  }

  @Override
  public Uni<LoadReport> load(LoadReportRequest request) {
    return Uni.createFrom().item(() -> {
      drain.refuseIfDraining("requests"); // the gateways take the replica out of routing at their next poll
      var loaded = host.loaded();
      return ProtoMapping.loadReport(loaded.engine().stats(), loaded.config().maxPositionEmbeddings());
    });
  }

  /** Drains the replica ({@link Drain}); answers once no stream runs here. */
  @Override
  public Uni<DrainResponse> drain(DrainRequest request) {
    return drain.answer(request, drainSettings.timeout());
  }
}
