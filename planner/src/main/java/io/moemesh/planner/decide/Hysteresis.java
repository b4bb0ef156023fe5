package io.moemesh.planner.decide;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Turns a stage's required counts over time into the count to scale to. Up at once, unless the stage scaled up less
 * than {@code upCooldown} ago; down only to the highest count required over the last {@code downCooldown} (the lower
 * count must have held that long, as the HPA's stabilization window), and not within {@code downCooldown} of the
 * stage's last scaling in either direction. Time is given, never read, so that tests replay recorded series.
 */
final class Hysteresis {
  private record Required(Instant at, int replicas) {}

  private final Duration upCooldown;
  private final Duration downCooldown;
  private final Deque<Required> window = new ArrayDeque<>();
  private Instant firstAt;
  private Instant lastScaleUpAt;
  private Instant lastScaleAt;

  Hysteresis(Duration upCooldown, Duration downCooldown) {
    this.upCooldown = upCooldown;
    this.downCooldown = downCooldown;
  }

  record Outcome(int desired, Reason reason) {}

  Outcome next(Instant now, int actual, int required) {
    if (firstAt == null) firstAt = now;
    window.addLast(new Required(now, required));
    while (window.peekFirst().at().isBefore(now.minus(downCooldown))) window.removeFirst();
    if (required > actual) {
      if (lastScaleUpAt != null && now.isBefore(lastScaleUpAt.plus(upCooldown))) return new Outcome(actual, Reason.UP_COOLDOWN);
      lastScaleUpAt = now;
      lastScaleAt = now;
      return new Outcome(required, Reason.SCALE_UP);
    }
    if (required == actual) return new Outcome(actual, Reason.STEADY);
    int highestInWindow = window.stream().mapToInt(Required::replicas).max().orElseThrow();
    boolean heldLongEnough = !now.isBefore(firstAt.plus(downCooldown));
    boolean calmSinceLastScale = lastScaleAt == null || !now.isBefore(lastScaleAt.plus(downCooldown));
    if (highestInWindow >= actual || !heldLongEnough || !calmSinceLastScale) return new Outcome(actual, Reason.DOWN_HOLD);
    lastScaleAt = now;
    return new Outcome(highestInWindow, Reason.SCALE_DOWN);
  }

  /** The count changed for a reason of its own (bounds): cool-downs count from now. */
  void scaledTo(Instant now, boolean up) {
    lastScaleAt = now;
    if (up) lastScaleUpAt = now;
  }
}
