package io.moemesh.kvstore;

import io.quarkus.runtime.configuration.MemorySize;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

/** Settings of the kv-store service ({@code moemesh.kv-store.*}). */
@ConfigMapping(prefix = "moemesh.kv-store")
public interface KvStoreConfig {

  /** Upper bound on the off-heap bytes of all objects, puts in progress included (e.g. {@code 16G}). */
  @WithDefault("1G")
  MemorySize maxBytes();

  /** Lease of an object whose PutStart names none, counted from its PutEnd. */
  @WithDefault("30s")
  Duration defaultLease();

  /** Longest lease a PutStart or an ExtendLease may ask for; longer requests are rejected. */
  @WithDefault("10m")
  Duration maxLease();

  /**
   * A put whose stream delivered no frame for this long is revoked by the reaper (as Mooncake discards stale
   * PutStarts): a stuck prefill must not hold its reservation while its stream stays open.
   */
  @WithDefault("60s")
  Duration putIdleTimeout();

  /** How often objects whose lease expired (and that no Get pins) and idle puts are freed. */
  @WithDefault("1s")
  Duration reaperInterval();

  /** Largest row payload of one Get frame: a bigger layer spans several frames (gRPC's default limit is 4 MiB). */
  @WithDefault("1M")
  MemorySize getFrameBytes();

  /** Threads that copy rows between gRPC messages and off-heap memory, so event loops only do I/O. */
  @WithDefault("2")
  int copyThreads();
}
