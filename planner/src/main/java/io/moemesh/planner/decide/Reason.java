package io.moemesh.planner.decide;

/** Why a stage's desired count is what it is. */
public enum Reason {
  /** the required count is the current one */
  STEADY,
  SCALE_UP,
  SCALE_DOWN,
  /** more are required, but the stage scaled up less than the up cool-down ago */
  UP_COOLDOWN,
  /** fewer are required, but not for the whole down cool-down, or the stage scaled less than that ago */
  DOWN_HOLD,
  /** no interval was measured (first round, or no replica answered): keep the count, within bounds */
  NO_DATA,
  /** the current count is outside the bounds */
  OUT_OF_BOUNDS
}
