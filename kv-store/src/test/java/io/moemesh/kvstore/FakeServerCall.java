package io.moemesh.kvstore;

import io.grpc.stub.ServerCallStreamObserver;
import java.util.ArrayList;
import java.util.List;

/**
 * A server call whose transport readiness the test sets; records what the handler sent and requested.
 * Thread-safe: handlers call it from the copy pool while the test reads it.
 */
final class FakeServerCall<T> extends ServerCallStreamObserver<T> {
  final List<T> sent = new ArrayList<>();
  Throwable error;
  boolean completed;
  int requested;
  boolean autoRequestDisabled;
  private int readyBudget = Integer.MAX_VALUE; // ready while fewer messages than this were sent
  private Runnable onReady = () -> {};
  private Runnable onCancel = () -> {};

  synchronized List<T> sent() {
    return List.copyOf(sent);
  }

  synchronized Throwable error() {
    return error;
  }

  synchronized boolean completed() {
    return completed;
  }

  synchronized int requested() {
    return requested;
  }

  /** The transport takes {@code messages} more messages, then stops being ready; calls the ready handler as grpc-java does. */
  void allow(int messages) {
    Runnable handler;
    synchronized (this) {
      readyBudget = sent.size() + messages;
      handler = onReady;
    }
    if (messages > 0) handler.run();
  }

  void cancel() {
    onCancel.run();
  }

  @Override public synchronized boolean isReady() { return sent.size() < readyBudget; }
  @Override public synchronized void setOnReadyHandler(Runnable r) { onReady = r; }
  @Override public synchronized void setOnCancelHandler(Runnable r) { onCancel = r; }
  @Override public boolean isCancelled() { return false; }
  @Override public void setCompression(String compression) {}
  @Override public synchronized void disableAutoInboundFlowControl() { autoRequestDisabled = true; }
  @Override public synchronized void disableAutoRequest() { autoRequestDisabled = true; }
  @Override public synchronized void request(int count) { requested += count; }
  @Override public void setMessageCompression(boolean enable) {}
  @Override public synchronized void onNext(T value) { sent.add(value); }
  @Override public synchronized void onError(Throwable t) { error = t; }
  @Override public synchronized void onCompleted() { completed = true; }
}
