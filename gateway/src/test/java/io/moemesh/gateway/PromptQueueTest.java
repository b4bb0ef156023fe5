package io.moemesh.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Admission by work, on a hand-moved clock. */
class PromptQueueTest {
  final AtomicLong now = new AtomicLong(1_000_000_000L);
  final PromptQueue queue = new PromptQueue(Duration.ofSeconds(10), now::get);
  static final Duration FLOOR = Duration.ofSeconds(1);

  void pass(Duration d) {
    now.addAndGet(d.toNanos());
  }

  /** Keeps the queue busy for {@code seconds}, serving {@code rate} tokens a second in 100-token prompts. */
  void serve(int seconds, int rate) {
    for (int s = 0; s < seconds * rate / 100; s++) {
      PromptQueue.Entry[] e = queue.admit(new int[] {100}, FLOOR);
      pass(Duration.ofNanos(1_000_000_000L * 100 / rate));
      e[0].computed();
    }
  }

  @Test
  void withoutAMeasuredRateOnlyTheCountLimits() {
    assertThat(queue.rate()).isNaN();
    queue.admit(new int[] {1_000_000}, FLOOR);
    queue.admit(new int[] {1_000_000, 1_000_000}, FLOOR);
    assertThat(queue.queuedTokens()).isEqualTo(3_000_000);
  }

  @Test
  void theRateIsTokensServedPerBusySecond() {
    serve(5, 1000);
    assertThat(queue.rate()).isCloseTo(1000, within(5.0));
    pass(Duration.ofMinutes(5)); // idle time is not counted against the rate
    assertThat(queue.rate()).isCloseTo(1000, within(5.0));
  }

  @Test
  void aPromptThatWouldWaitBeyondTheBoundIsRefusedAtOnceWithTheExcessAsRetryAfter() {
    serve(5, 1000);
    queue.admit(new int[] {9_000}, FLOOR); // 9 s of work queued
    assertThatThrownBy(() -> queue.admit(new int[] {2_000, 2_000}, FLOOR)).isInstanceOfSatisfying(ApiError.class, e -> {
      assertThat(e.status()).isEqualTo(429);
      assertThat(e.getMessage()).contains("about 13 s of prompts are queued (9000 tokens, at 100").endsWith("tokens/s); retry later");
      assertThat(e.retryAfter()).isBetween(Duration.ofMillis(2900), Duration.ofMillis(3100));
    });
    assertThat(queue.queuedTokens()).as("a refused request queues nothing").isEqualTo(9_000);
    queue.admit(new int[] {1_000}, FLOOR); // 10 s: at the bound
  }

  @Test
  void leavingFreesTheQueueOnceAndDroppedWorkIsNotCountedAsServed() {
    serve(2, 1000);
    double rate = queue.rate();
    PromptQueue.Entry[] e = queue.admit(new int[] {5_000, 5_000}, FLOOR);
    pass(Duration.ofSeconds(1));
    e[0].dropped();
    e[0].computed();
    e[1].dropped();
    assertThat(queue.queuedTokens()).isZero();
    assertThat(queue.rate()).as("1 busy second, nothing served").isLessThan(rate);
  }

  @Test
  void aStalledMeshHasAnUnknownRateNotAZeroOne() {
    serve(2, 1000);
    PromptQueue.Entry[] stuck = queue.admit(new int[] {100}, FLOOR);
    pass(Duration.ofMinutes(2)); // nothing computed: the decayed count of served prompts falls below the minimum
    assertThat(queue.rate()).isNaN();
    assertThat(queue.admit(new int[] {100_000}, FLOOR)).as("admitted by the generation count alone").hasSize(1);
    stuck[0].dropped();
  }

  @Test
  void anEmptyQueueAdmitsAnyPromptHoweverSlowTheMesh() {
    serve(2, 100);
    assertThat(queue.admit(new int[] {50_000}, FLOOR)).hasSize(1);
  }
}
