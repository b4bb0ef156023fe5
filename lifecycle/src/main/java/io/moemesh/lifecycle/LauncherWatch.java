package io.moemesh.lifecycle;

import java.time.Duration;
import java.util.Optional;

/**
 * Watches the process that launched this one and runs an action once when it is gone, however it went: a launcher
 * killed with {@code kill -9} runs no shutdown hook, so its children must notice by themselves.
 *
 * <p>How it tells: while the launcher is this process's parent (as {@code bin/moemesh up} and the planner's local
 * connector start their services), the launcher is gone as soon as the parent changes: the kernel hands a dying
 * process's children to a reaper when it exits, before anyone collects its exit status, so a launcher left a zombie
 * counts as gone too, and a recycled pid cannot pass for it. A launcher that is not the parent (a wrapper in between)
 * is gone when its pid no longer names the process that started at its start time. Both are read from {@code /proc}
 * every {@code poll}, on one daemon thread.
 *
 * <p>Why not a pipe on stdin whose end-of-file means the launcher is gone: a shell launcher's children inherit its
 * descriptors, so the pipe of the first service stays open in every service started after it, and anything holding
 * it outlives the launcher.
 */
public final class LauncherWatch implements AutoCloseable {
  private final Thread thread;

  private LauncherWatch(Thread thread) {
    this.thread = thread;
  }

  /** Starts watching the process {@code launcherPid}; {@code onGone} runs once, on the watch's thread, when it is gone. */
  public static LauncherWatch start(long launcherPid, Duration poll, Runnable onGone) {
    if (launcherPid <= 0) throw new IllegalArgumentException("launcher pid must be positive, not " + launcherPid);
    Optional<ProcessHandle> launcher = ProcessHandle.of(launcherPid);
    boolean isParent = parentPid() == launcherPid;
    Thread t = Thread.ofPlatform().name("launcher-watch").daemon().unstarted(() -> {
      try {
        while (launcher.isPresent() && alive(launcher.get(), isParent)) Thread.sleep(poll);
        if (!Thread.currentThread().isInterrupted()) onGone.run(); // closed before its first sleep: not ours to act
      } catch (InterruptedException stopped) {
        // closed: this process is stopping anyway
      }
    });
    t.start();
    return new LauncherWatch(t);
  }

  private static boolean alive(ProcessHandle launcher, boolean isParent) {
    return isParent ? parentPid() == launcher.pid() : launcher.isAlive();
  }

  private static long parentPid() {
    return ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
  }

  /** Stops watching (the action does not run after this returns, unless it was already running). */
  @Override
  public void close() {
    thread.interrupt();
  }
}
