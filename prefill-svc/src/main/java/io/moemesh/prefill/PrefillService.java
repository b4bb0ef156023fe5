package io.moemesh.prefill;

import io.moemesh.enginehost.ProtoMapping;
import io.grpc.Status;
import io.moemesh.engine.GenerationRequest;
import io.moemesh.engine.KvHandoff;
import io.moemesh.engine.LoadedEngine;
import io.moemesh.engine.RequestOutput;
import io.moemesh.engine.kv.PageHashes;
import io.moemesh.enginehost.Drain;
import io.moemesh.enginehost.EngineHost;
import io.moemesh.enginehost.EngineMetrics;
import io.moemesh.enginehost.wire.WireDTypes;
import io.moemesh.kernels.DType;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.common.v1.LoadReport;
import io.moemesh.proto.common.v1.DrainRequest;
import io.moemesh.proto.common.v1.DrainResponse;
import io.moemesh.proto.common.v1.LoadReportRequest;
import io.moemesh.proto.drain.DrainMarker;
import io.moemesh.proto.kvstore.v1.KvLayout;
import io.moemesh.proto.kvstore.v1.PutResponse;
import io.moemesh.proto.prefill.v1.KvTicket;
import io.moemesh.proto.prefill.v1.Prefill;
import io.moemesh.proto.prefill.v1.PrefillRequest;
import io.moemesh.proto.prefill.v1.PrefillResponse;
import io.quarkus.grpc.GrpcService;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.subscription.UniEmitter;
import jakarta.inject.Inject;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Prefill over gRPC: looks for the prompt's prefix in the stores ({@link StoredPrefixes}), opens the prompt's object
 * in kv-store, runs the request in prefill role (each layer of each chunk streams to the store as it is computed;
 * a stored prefix is read rather than computed when the engine's own cache holds less of it), commits the object
 * and answers with the ticket and the first token. A cancelled call aborts the request and revokes the object
 * (or, if it was committed meanwhile, releases it: the ticket would reach nobody). While the replica drains
 * ({@link Drain}) new prompts and Load answer UNAVAILABLE with the drain marker (the gateway prefills elsewhere); a
 * prompt still running at the drain's timeout is aborted and answered so too.
 */
@GrpcService
public class PrefillService implements Prefill {
  @Inject EngineHost host;
  @Inject StorePutConnector store;
  @Inject EngineMetrics metrics;
  @Inject Drain drain;
  @Inject PrefillDrain drainSettings;

  @Override
  public Uni<PrefillResponse> prefill(PrefillRequest request) {
    io.grpc.Context call = io.grpc.Context.current(); // cancelled with the RPC (a unary Uni is not told)
    return Uni.createFrom().emitter(emitter -> {
      if (drain.draining()) {
        emitter.fail(DrainMarker.unavailable("prefill replica draining: it takes no new prompt"));
        return;
      }
      LoadedEngine loaded = host.loaded();
      GenerationRequest spec;
      try {
        int[] prompt = request.getPromptTokenIdsList().stream().mapToInt(Integer::intValue).toArray();
        spec = new GenerationRequest(request.getRequestId(), prompt, ProtoMapping.sampling(request.getSampling()), 1,
            request.getPriority(), KvHandoff.Export.FULL);
        loaded.engine().validate(spec);
      } catch (IllegalArgumentException e) {
        emitter.fail(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
        return;
      }
      int pageSize = loaded.kvCache().pageSize();
      long[] pageHashes = PageHashes.chain(storeModelId(loaded), spec.promptTokenIds(), pageSize, spec.numPromptTokens() / pageSize);
      var trace = io.opentelemetry.context.Context.current(); // the engine span: the put's and the load's parent
      store.prefixes().map(p -> p.find(pageHashes, pageSize, spec.numPromptTokens() - 1))
          .orElse(CompletableFuture.completedFuture(Optional.empty()))
          .thenAccept(found -> call.run(() -> {
            try (var scope = trace.makeCurrent()) {
              run(found.isEmpty() ? spec : spec.withHandoff(new KvHandoff.Export(found.get().tokens())), found, pageHashes, loaded, emitter, call);
            }
          }))
          .exceptionally(e -> { // a bug, not the client's: say so rather than leave the call to its deadline
            emitter.fail(Status.INTERNAL.withDescription("request " + spec.id() + ": " + e).asRuntimeException());
            return null;
          });
    });
  }

  /**
   * The names of page hashes in the stores: the model and its precision, as objects of another precision hold other
   * numbers for the same prompt.
   */
  private static String storeModelId(LoadedEngine loaded) {
    return loaded.model().modelId() + "@" + loaded.model().precision();
  }

  /** Opens the object, submits the request (which may load {@code found} first) and settles the call once. */
  private void run(GenerationRequest spec, Optional<StoredPrefixes.Found> found, long[] pageHashes, LoadedEngine loaded,
      UniEmitter<? super PrefillResponse> emitter, io.grpc.Context call) {
    if (call.isCancelled()) {
      emitter.fail(Status.CANCELLED.withDescription("request " + spec.id() + " was cancelled").asRuntimeException());
      return;
    }
    found.ifPresent(f -> store.prefixes().orElseThrow().expect(spec.id(), f));
    KvLayout layout = layout(loaded, spec.numPromptTokens());
    DType dtype = loaded.model().precision().kvCacheDType();
    String storeAddress = store.begin(spec.id(), layout, pageHashes,
        WireDTypes.wire(dtype), dtype.byteSize());
    var settled = new AtomicBoolean();
    try {
      loaded.engine().submit(spec, metrics.timed(out -> {
        if (out.finished() && settled.compareAndSet(false, true)) {
          forgetPrefix(spec);
          finish(spec, layout, storeAddress, out, emitter, call);
        }
      }, EngineMetrics.Leg.FIRST_TOKEN));
    } catch (IllegalArgumentException e) {
      settled.set(true);
      forgetPrefix(spec);
      store.revoke(spec.id(), e.getMessage());
      emitter.fail(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    Drain.Call inFlight = drain.track(() -> {
      if (settled.compareAndSet(false, true)) { // still computing at the drain's timeout
        loaded.engine().abort(spec.id());
        forgetPrefix(spec);
        store.revoke(spec.id(), "prefill replica drained");
        emitter.fail(DrainMarker.unavailable("prefill replica drained: request " + spec.id() + " was still running at the drain timeout"));
      }
    });
    onCancel(call, emitter, () -> {
      inFlight.close();
      if (settled.compareAndSet(false, true)) { // cancelled before the engine finished
        loaded.engine().abort(spec.id());
        forgetPrefix(spec);
        store.revoke(spec.id(), "prefill cancelled");
      }
    });
  }

  private void forgetPrefix(GenerationRequest spec) {
    store.prefixes().ifPresent(p -> p.forget(spec.id()));
  }

  /**
   * Runs {@code cancel} when the call is cancelled or the Uni terminates. Registered after the submit: a call
   * cancelled before then runs it at once, so the abort reaches the engine after the request (an abort queued
   * before it would be a no-op, and the request would run for nobody).
   */
  private static void onCancel(io.grpc.Context call, UniEmitter<?> emitter, Runnable cancel) {
    emitter.onTermination(cancel);
    call.addListener(context -> cancel.run(), Runnable::run);
  }

  private void finish(GenerationRequest spec, KvLayout layout, String storeAddress, RequestOutput out,
      UniEmitter<? super PrefillResponse> emitter, io.grpc.Context call) {
    switch (out.status()) {
      case FINISHED_LENGTH -> store.commit(spec.id()).whenComplete((put, error) -> {
        if (error != null)
          emitter.fail(Status.UNAVAILABLE.withDescription("kv-store " + storeAddress + " did not take the prompt's KV: "
              + Status.fromThrowable(error)).asRuntimeException());
        else if (call.isCancelled()) store.release(storeAddress, put.getKey()); // the caller left: nobody gets the ticket
        else emitter.complete(response(spec, out).setTicket(ticket(spec, layout, storeAddress, put)).build());
      });
      case FINISHED_STOPPED -> { // the first token ends the request: nothing for a decode replica to do
        store.revoke(spec.id(), "the first token finished the request");
        emitter.complete(response(spec, out).setFinishReason(FinishReason.FINISH_REASON_STOP).build());
      }
      case FINISHED_ABORTED -> {
        store.revoke(spec.id(), "aborted");
        emitter.fail(Status.CANCELLED.withDescription("request " + spec.id() + " was aborted").asRuntimeException());
      }
      default -> {
        store.revoke(spec.id(), String.valueOf(out.error()));
        emitter.fail(Status.INTERNAL.withDescription("request " + spec.id() + " failed: " + out.error()).asRuntimeException());
      }
    }
  }

  private static PrefillResponse.Builder response(GenerationRequest spec, RequestOutput out) {
    return PrefillResponse.newBuilder().setFirstToken(ProtoMapping.token(out.newTokens().getFirst()))
        .setSampledDraws(spec.sampling().isGreedy() ? 0 : 1).setUsage(ProtoMapping.usage(out.usage())).addAllDraftTokenIds(out.drafts());
  }

  private static KvTicket ticket(GenerationRequest spec, KvLayout layout, String storeAddress, PutResponse put) {
    return KvTicket.newBuilder().setStoreAddress(storeAddress).setObjectKey(put.getKey()).setNumTokens(spec.numPromptTokens())
        .setLayout(layout).setLeaseExpireTime(put.getLeaseExpireTime()).build();
  }

  private static KvLayout layout(LoadedEngine loaded, int numTokens) {
    var c = loaded.config();
    return KvLayout.newBuilder().setNumLayers(loaded.numExportedKvLayers()).setNumTokens(numTokens).setLatentDim(c.latentDim())
        .setDtype(WireDTypes.wire(loaded.model().precision().kvCacheDType()))
        .setPageSize(loaded.kvCache().pageSize()).build();
  }

  @Override
  public Uni<LoadReport> load(LoadReportRequest request) {
    return Uni.createFrom().item(() -> {
      drain.refuseIfDraining("prompts"); // the gateways take the replica out of routing at their next poll
      var loaded = host.loaded();
      return ProtoMapping.loadReport(loaded.engine().stats(), loaded.config().maxPositionEmbeddings());
    });
  }

  /** Drains the replica ({@link Drain}); answers once no prompt runs here. */
  @Override
  public Uni<DrainResponse> drain(DrainRequest request) {
    return drain.answer(request, drainSettings.timeout());
  }
}
