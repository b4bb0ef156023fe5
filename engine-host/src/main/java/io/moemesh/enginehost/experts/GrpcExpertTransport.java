package io.moemesh.enginehost.experts;

import io.grpc.ManagedChannel;
import io.moemesh.proto.auth.MeshChannels;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.moemesh.engine.experts.ExpertOutputs;
import io.moemesh.engine.experts.ExpertTransport;
import io.moemesh.enginehost.telemetry.ExpertStepSpans;
import io.moemesh.enginehost.wire.WireDTypes;
import io.moemesh.kernels.Tensor;
import io.moemesh.model.Precision;
import io.moemesh.model.moe.ExpertDispatch;
import io.moemesh.proto.expert.v1.CombineFrame;
import io.moemesh.proto.expert.v1.DispatchFrame;
import io.moemesh.proto.expert.v1.ExpertRole;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.ExpertsGrpc;
import io.moemesh.proto.expert.v1.InfoRequest;
import io.moemesh.proto.expert.v1.SharedFrame;
import io.moemesh.proto.tensor.WireTensors;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * The expert services over gRPC: one bidirectional stream per service, opened on first use and again after it
 * breaks; frames carry a sequence number, answers complete the matching future. A broken stream fails the
 * frames in flight with the service's address and status (the step that needed them fails; the next one
 * reopens the stream). Each frame carries the W3C context of its step's span of the traffic with that service
 * ({@link ExpertStepSpans}), empty when the step is untraced, so the service's span of the step joins the request's trace.
 */
public final class GrpcExpertTransport implements ExpertTransport {
  private static final Logger LOG = Logger.getLogger(GrpcExpertTransport.class);
  private static final int MAX_FRAME = 256 << 20;
  private final Link<DispatchFrame>[] shards;
  private final Link<SharedFrame> shared;

  @SuppressWarnings("unchecked")
  private GrpcExpertTransport(ExpertsSettings settings) {
    shards = new Link[settings.shards().size()];
    for (int s = 0; s < shards.length; s++)
      shards[s] = new Link<>("routed shard " + s + " at ", settings.shards().get(s), (stub, answers) -> stub.dispatch(answers));
    shared = settings.sharedAddress().map(a -> new Link<SharedFrame>("shared experts at ", a, (stub, answers) -> stub.shared(answers))).orElse(null);
  }

  /**
   * Opens the links to the expert services and blocks until every one answers and agrees with this engine's
   * model, precision and shard layout (they may still be loading their experts).
   */
  public static ExpertTransport connect(ExpertsSettings settings, Precision precision) {
    var transport = new GrpcExpertTransport(settings);
    try {
      transport.awaitAgreement(precision, Duration.ofMinutes(10));
      return transport;
    } catch (RuntimeException e) {
      transport.close();
      throw e;
    }
  }

  /** Waits until every service answers Info (they may still be loading) and checks it serves what this engine expects. */
  private void awaitAgreement(Precision precision, Duration patience) {
    long deadline = System.nanoTime() + patience.toNanos();
    for (int s = 0; s < shards.length; s++) {
      ExpertServiceInfo info = info(shards[s], deadline);
      check(shards[s], info.getRole() == ExpertRole.EXPERT_ROLE_ROUTED, "is not a routed-expert shard");
      check(shards[s], info.getShard() == s && info.getNumShards() == shards.length,
          "is shard " + info.getShard() + " of " + info.getNumShards() + ", expected " + s + " of " + shards.length);
      check(shards[s], info.getPrecision().equals(precision.name().toLowerCase(Locale.ROOT)), "computes in " + info.getPrecision() + ", this engine in " + precision);
      check(shards[s], info.getHeldCount() > 0, "holds no MoE layers"); // a rejoining shard may hold no experts until it gets its slots back
    }
    if (shared != null) {
      ExpertServiceInfo info = info(shared, deadline);
      check(shared, info.getRole() == ExpertRole.EXPERT_ROLE_SHARED, "is not a shared-expert service");
      check(shared, info.getPrecision().equals(precision.name().toLowerCase(Locale.ROOT)), "computes in " + info.getPrecision() + ", this engine in " + precision);
    }
  }

  private static ExpertServiceInfo info(Link<?> link, long deadline) {
    while (true) {
      try {
        return ExpertsGrpc.newBlockingStub(link.channel).withDeadlineAfter(5, TimeUnit.SECONDS).info(InfoRequest.getDefaultInstance());
      } catch (StatusRuntimeException e) {
        if (System.nanoTime() > deadline) throw new IllegalStateException(link.name + " did not answer: " + e.getStatus());
        LOG.debugf("waiting for %s: %s", link.name, e.getStatus());
        try {
          Thread.sleep(250); // a polling interval while the service loads its experts
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted while waiting for " + link.name);
        }
      }
    }
  }

  private static void check(Link<?> link, boolean ok, String problem) {
    if (!ok) throw new IllegalStateException(link.name + " " + problem);
  }

  @Override
  public int numShards() {
    return shards.length;
  }

  @Override
  public CompletableFuture<ExpertOutputs> routed(int shard, ExpertDispatch d) {
    var call = ExpertStepSpans.call(shards[shard].address, shard);
    var b = DispatchFrame.newBuilder().setLayerId(d.layerId()).setPlacementVersion(d.placementVersion()).setHidden(WireDTypes.write(d.hidden()))
        .setTokenIndex(WireTensors.ints(d.tokenIndex())).setTraceparent(call.traceparent());
    var groups = ExpertDispatch.Groups.of(d.expertOffsets());
    b.setExperts(WireTensors.ints(groups.experts())).setExpertEnds(WireTensors.ints(groups.ends()));
    if (d.scales() != null) b.setScales(WireDTypes.write(d.scales()));
    return shards[shard].send(seq -> b.setSeq(seq).build(), call, d.layerId(), d.hidden().dim(0), d.numAssignments());
  }

  @Override
  public CompletableFuture<ExpertOutputs> shared(int layerId, Tensor hidden, Tensor scales) {
    if (shared == null) throw new IllegalStateException("no shared-expert service is configured");
    var call = ExpertStepSpans.call(shared.address, -1);
    var b = SharedFrame.newBuilder().setLayerId(layerId).setHidden(WireDTypes.write(hidden)).setTraceparent(call.traceparent());
    if (scales != null) b.setScales(WireDTypes.write(scales));
    return shared.send(seq -> b.setSeq(seq).build(), call, layerId, hidden.dim(0), hidden.dim(0));
  }

  @Override
  public void close() {
    for (var s : shards) s.close();
    if (shared != null) shared.close();
  }

  private static ManagedChannel channel(String address) {
    return MeshChannels.builder(address).maxInboundMessageSize(MAX_FRAME).build();
  }

  /** One stream to one expert service and the frames awaiting their answers. */
  private static final class Link<F extends com.google.protobuf.MessageLite> {
    interface Opener<F> {
      StreamObserver<F> open(ExpertsGrpc.ExpertsStub stub, StreamObserver<CombineFrame> answers);
    }

    final String name;
    final String address;
    final ManagedChannel channel;
    private final Opener<F> opener;
    private final Map<Long, Pending> pending = new ConcurrentHashMap<>();
    private final AtomicLong seq = new AtomicLong();
    private StreamObserver<F> requests; // guarded by this

    /** A frame awaiting its answer, and its step's call span. */
    private record Pending(CompletableFuture<ExpertOutputs> answer, ExpertStepSpans.Call call, long sentNanos) {}

    Link(String what, String address, Opener<F> opener) {
      this.name = what + address;
      this.address = address;
      this.channel = channel(address);
      this.opener = opener;
    }

    /** Sends the frame numbered by {@code frame}: one layer's {@code tokens} hidden rows, asking for {@code rows} output rows. */
    synchronized CompletableFuture<ExpertOutputs> send(Function<Long, F> frame, ExpertStepSpans.Call call, int layerId, long tokens, long rows) {
      long n = seq.incrementAndGet();
      var answer = new CompletableFuture<ExpertOutputs>();
      F f = frame.apply(n);
      call.sent(layerId, tokens, rows, f.getSerializedSize());
      pending.put(n, new Pending(answer, call, System.nanoTime()));
      if (requests == null) {
        channel.resetConnectBackoff(); // a restarted service is tried at once, not after the backoff
        requests = opener.open(ExpertsGrpc.newStub(channel), new Answers());
      }
      requests.onNext(f);
      return answer;
    }

    private synchronized void broken(Throwable why) {
      requests = null;
      String reason = why instanceof StatusRuntimeException e ? MeshChannels.describe(e.getStatus()) : String.valueOf(why);
      pending.keySet().forEach(k -> {
        var p = pending.remove(k);
        if (p == null) return;
        p.call.answered(p.sentNanos, 0, name + ": " + reason);
        p.answer.completeExceptionally(new IllegalStateException(name + ": " + reason, why));
      });
    }

    synchronized void close() {
      if (requests != null) requests.onCompleted();
      channel.shutdownNow();
      broken(Status.CANCELLED.withDescription("the transport is closed").asRuntimeException());
    }

    private final class Answers implements StreamObserver<CombineFrame> {
      @Override
      public void onNext(CombineFrame frame) {
        var p = pending.remove(frame.getSeq());
        if (p == null) return; // its stream broke and it was failed already
        p.call.answered(p.sentNanos, frame.getSerializedSize(), frame.getError().isEmpty() ? null : frame.getError());
        var f = p.answer;
        if (!frame.getError().isEmpty()) f.completeExceptionally(new IllegalStateException(name + ": " + frame.getError()));
        else {
          try {
            f.complete(outputs(frame.getOutputs()));
          } catch (RuntimeException e) {
            f.completeExceptionally(new IllegalStateException(name + " answered a malformed frame: " + e.getMessage(), e));
          }
        }
      }

      @Override
      public void onError(Throwable t) {
        broken(t);
      }

      @Override
      public void onCompleted() {
        broken(Status.UNAVAILABLE.withDescription("the service closed the stream").asRuntimeException());
      }
    }
  }

  /** An answer's outputs, checked by the codec: BF16 or F32 rows, exactly as many bytes as their shape needs. */
  private static ExpertOutputs outputs(io.moemesh.proto.common.v1.Tensor t) {
    WireTensors.Checked c = WireTensors.read(t, "expert outputs", 2, io.moemesh.proto.common.v1.DType.DTYPE_BF16,
        io.moemesh.proto.common.v1.DType.DTYPE_F32);
    return new ExpertOutputs(WireDTypes.kernels(c.dtype(), "expert outputs"), c.dim(0), c.dim(1), c.data());
  }
}
