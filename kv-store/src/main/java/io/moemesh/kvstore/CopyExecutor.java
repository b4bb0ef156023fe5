package io.moemesh.kvstore;

import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads that move KV rows between gRPC messages and off-heap memory (and reserve/free that memory).
 * A small fixed pool: copies are memory-bound, so more threads than cores only adds contention, and the
 * Vert.x event loops stay free for I/O (docs/architecture.md, "Threads").
 */
@Singleton
public class CopyExecutor implements java.util.concurrent.Executor {
  private final ExecutorService pool;

  CopyExecutor(KvStoreConfig config) {
    AtomicInteger n = new AtomicInteger();
    pool = Executors.newFixedThreadPool(config.copyThreads(), r -> {
      Thread t = new Thread(r, "kv-store-copy-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  @Override
  public void execute(Runnable task) {
    pool.execute(task);
  }

  @PreDestroy
  void shutdown() {
    pool.shutdownNow();
  }
}
