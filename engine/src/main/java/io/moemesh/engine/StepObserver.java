package io.moemesh.engine;

/**
 * Told about each step the runner executes, on the step thread, around {@code runner.execute(plan)} (engine-host: the
 * step's trace span, current while the model runs, so the frames sent to expert services carry its context).
 */
@FunctionalInterface
public interface StepObserver {
  StepObserver NONE = plan -> Step.NONE;

  /** Called just before the runner executes {@code plan}; the returned step is closed right after, on this thread. */
  Step begin(SchedulerOutput plan);

  /** One step under way. */
  interface Step extends AutoCloseable {
    Step NONE = () -> {};

    /** The step threw {@code failure} (its requests are then run one by one, outside this step). */
    default void failed(RuntimeException failure) {}

    @Override
    void close();
  }
}
