package io.moemesh.gateway;

import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.moemesh.proto.auth.MeshChannels;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import io.moemesh.proto.kvstore.v1.KvStoreGrpc;
import io.moemesh.proto.kvstore.v1.ReleaseRequest;
import io.moemesh.proto.kvstore.v1.ReleaseResponse;
import io.moemesh.proto.prefill.v1.KvTicket;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.jboss.logging.Logger;

/**
 * Releases the kv-store object of a ticket that no decode replica will load: the client left (or a stop string
 * ended the choice) after the prefill answered, or the decode leg failed. The store then frees it without waiting
 * for its lease; a decode replica that was already loading it keeps its pinned copy, and one that releases it too
 * is harmless (Release is idempotent). Best effort: a release that fails leaves the object to its lease.
 */
@Singleton
public class TicketReleaser {
  private static final Logger LOG = Logger.getLogger(TicketReleaser.class);
  private static final long DEADLINE_MS = 5_000;
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();

  void release(KvTicket ticket, Metadata headers) {
    var stub = KvStoreGrpc.newStub(channels.computeIfAbsent(ticket.getStoreAddress(),
            a -> MeshChannels.builder(a).build()))
        .withDeadlineAfter(DEADLINE_MS, TimeUnit.MILLISECONDS)
        .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
    var request = ReleaseRequest.newBuilder().setKey(ticket.getObjectKey()).build();
    // outside any caller's gRPC context: a cancellation is what brings us here
    Context.ROOT.run(() -> stub.release(request, new StreamObserver<ReleaseResponse>() {
      @Override
      public void onNext(ReleaseResponse value) {}

      @Override
      public void onError(Throwable t) {
        Status status = Status.fromThrowable(t);
        if (status.getCode() != Status.Code.NOT_FOUND) {
          LOG.warnf("could not release KV object %s at %s: %s", ticket.getObjectKey(), ticket.getStoreAddress(), status);
        }
      }

      @Override
      public void onCompleted() {}
    }));
  }

  @PreDestroy
  void close() {
    channels.values().forEach(ManagedChannel::shutdownNow);
  }
}
