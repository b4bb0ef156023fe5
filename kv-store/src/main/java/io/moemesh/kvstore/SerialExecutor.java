package io.moemesh.kvstore;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import org.jboss.logging.Logger;

/**
 * Runs tasks one at a time, in submission order, on a shared pool: one per stream, so a stream's callbacks
 * (frame, half-close, cancel) keep their order off the event loop without holding a pool thread between them.
 */
final class SerialExecutor implements Executor {
  private static final Logger LOG = Logger.getLogger(SerialExecutor.class);
  private final Executor pool;
  private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
  private final AtomicInteger queued = new AtomicInteger();

  SerialExecutor(Executor pool) {
    this.pool = pool;
  }

  @Override
  public void execute(Runnable task) {
    tasks.add(task);
    if (queued.getAndIncrement() == 0) pool.execute(this::drain);
  }

  private void drain() {
    do {
      try {
        tasks.poll().run();
      } catch (RuntimeException | Error e) { // tasks answer their own failures; this only keeps the queue moving
        LOG.error("stream task failed", e);
      }
    } while (queued.decrementAndGet() != 0);
  }
}
