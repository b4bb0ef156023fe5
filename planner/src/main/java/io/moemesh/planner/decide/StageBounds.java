package io.moemesh.planner.decide;

/** The replica counts a stage may have: {@code 1 ≤ min ≤ max} (with no replica there is nothing to observe). */
public record StageBounds(int min, int max) {
  public StageBounds {
    if (min < 1 || max < min) throw new IllegalArgumentException("replica bounds need 1 <= min <= max, not min " + min + ", max " + max);
  }

  public int clamp(int replicas) {
    return Math.clamp(replicas, min, max);
  }
}
