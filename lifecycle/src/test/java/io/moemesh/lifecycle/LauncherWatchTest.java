package io.moemesh.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The watch on real processes: a {@code sleep} stands in for a launcher that is not this process's parent (the
 * parent case, a launcher killed with {@code kill -9}, is LauncherDeathMeshTest's, in e2e-tests).
 */
class LauncherWatchTest {
  static final Duration POLL = Duration.ofMillis(50), BOUND = Duration.ofSeconds(10);

  @Test
  void actsOnceWhenTheLauncherIsKilled() throws Exception {
    Process launcher = new ProcessBuilder("sleep", "600").start();
    var gone = new AtomicInteger();
    try (var watch = LauncherWatch.start(launcher.pid(), POLL, gone::incrementAndGet)) {
      Thread.sleep(POLL.multipliedBy(4).toMillis());
      assertThat(gone).as("while the launcher runs").hasValue(0);
      launcher.destroyForcibly().waitFor();
      await().atMost(BOUND).until(() -> gone.get() == 1);
      Thread.sleep(POLL.multipliedBy(4).toMillis());
      assertThat(gone).as("once").hasValue(1);
    }
  }

  @Test
  void actsAtOnceWhenTheLauncherIsAlreadyGone() throws Exception {
    Process launcher = new ProcessBuilder("true").start();
    launcher.waitFor();
    var gone = new AtomicInteger();
    try (var watch = LauncherWatch.start(launcher.pid(), POLL, gone::incrementAndGet)) {
      await().atMost(BOUND).until(() -> gone.get() == 1);
    }
  }

  @Test
  void aClosedWatchDoesNotAct() throws Exception {
    Process launcher = new ProcessBuilder("sleep", "600").start();
    var gone = new AtomicInteger();
    LauncherWatch.start(launcher.pid(), POLL, gone::incrementAndGet).close();
    launcher.destroyForcibly().waitFor();
    Thread.sleep(POLL.multipliedBy(6).toMillis());
    assertThat(gone).hasValue(0);
  }

  @Test
  void refusesANonPositivePid() {
    assertThatThrownBy(() -> LauncherWatch.start(0, POLL, () -> {})).isInstanceOf(IllegalArgumentException.class);
  }
}
