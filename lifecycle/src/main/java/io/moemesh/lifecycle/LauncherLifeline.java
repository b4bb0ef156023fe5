package io.moemesh.lifecycle;

import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.time.Duration;
import org.jboss.logging.Logger;

/**
 * Stops this service when the process that launched it is gone ({@link LauncherConfig#pid()}): the same shutdown as
 * SIGTERM, so an engine drains its calls in flight, and its ports are free once it exits. Every service gets it from
 * this module; without the setting it does nothing.
 */
@Singleton
class LauncherLifeline {
  private static final Logger LOG = Logger.getLogger(LauncherLifeline.class);
  /** How often the launcher is looked at: its loss is noticed within this (two reads of /proc each time). */
  static final Duration POLL = Duration.ofMillis(500);

  @Inject LauncherConfig config;
  private LauncherWatch watch;

  /** First of the startup observers: a launcher lost while the model loads stops the service once it has started. */
  void start(@Observes @Priority(0) StartupEvent event) {
    config.pid().ifPresent(pid -> {
      LOG.infof("stops when its launcher (pid %d) is gone", pid);
      watch = LauncherWatch.start(pid, POLL, () -> {
        LOG.warnf("the launcher (pid %d) is gone: stopping, as on SIGTERM", pid);
        Quarkus.asyncExit();
      });
    });
  }

  void stop(@Observes ShutdownEvent event) {
    if (watch != null) watch.close();
  }
}
