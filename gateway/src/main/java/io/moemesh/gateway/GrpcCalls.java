package io.moemesh.gateway;

import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.subscription.BackPressureStrategy;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * grpc-java async calls as Mutiny types whose cancellation cancels the call, so a backend sees the client leave.
 * (Quarkus' generated Mutiny client stubs do not: their emitters never cancel the underlying ClientCall — checked
 * in quarkus-grpc-stubs 3.33.2.)
 */
final class GrpcCalls {
  private GrpcCalls() {}

  static <Q, R> Uni<R> unary(Q request, BiConsumer<Q, StreamObserver<R>> call) {
    return Uni.createFrom().emitter(emitter -> {
      AtomicReference<R> response = new AtomicReference<>();
      var observer = new CancellingObserver<Q, R>(response::set, emitter::fail, () -> emitter.complete(response.get()));
      emitter.onTermination(observer::cancel);
      call.accept(request, observer);
    });
  }

  static <Q, R> Multi<R> serverStream(Q request, BiConsumer<Q, StreamObserver<R>> call) {
    return Multi.createFrom().emitter(emitter -> {
      var observer = new CancellingObserver<Q, R>(emitter::emit, emitter::fail, emitter::complete);
      emitter.onTermination(observer::cancel);
      call.accept(request, observer);
    }, BackPressureStrategy.BUFFER);
  }

  /** Forwards the call's events; {@link #cancel} cancels it unless it already ended. */
  private static final class CancellingObserver<Q, R> implements ClientResponseObserver<Q, R> {
    private final Consumer<R> onItem;
    private final Consumer<Throwable> onFailure;
    private final Runnable onDone;
    private ClientCallStreamObserver<Q> call; // guarded by this
    private boolean ended; // guarded by this: the call closed, or we cancelled it

    CancellingObserver(Consumer<R> onItem, Consumer<Throwable> onFailure, Runnable onDone) {
      this.onItem = onItem;
      this.onFailure = onFailure;
      this.onDone = onDone;
    }

    @Override
    public void beforeStart(ClientCallStreamObserver<Q> requestStream) {
      boolean cancelNow;
      synchronized (this) {
        call = requestStream;
        cancelNow = ended;
      }
      if (cancelNow) requestStream.cancel("cancelled by the gateway", null);
    }

    void cancel() {
      ClientCallStreamObserver<Q> toCancel;
      synchronized (this) {
        if (ended) return;
        ended = true;
        toCancel = call;
      }
      if (toCancel != null) toCancel.cancel("cancelled by the gateway (client gone or request finished)", null);
    }

    private synchronized boolean end() {
      boolean first = !ended;
      ended = true;
      return first;
    }

    @Override
    public void onNext(R value) {
      onItem.accept(value);
    }

    @Override
    public void onError(Throwable t) {
      if (end()) onFailure.accept(t);
    }

    @Override
    public void onCompleted() {
      if (end()) onDone.run();
    }
  }
}
