package io.moemesh.planner.loop;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/** A clock the test moves: rounds 10 s apart without waiting 10 s. */
final class SteppedClock extends Clock {
  private volatile Instant now;

  SteppedClock(Instant start) {
    now = start;
  }

  void advance(Duration d) {
    now = now.plus(d);
  }

  @Override public Instant instant() { return now; }
  @Override public ZoneId getZone() { return ZoneOffset.UTC; }
  @Override public Clock withZone(ZoneId zone) { return this; }
}
