package io.moemesh.engine;

/** Runs one step's plan through the model: math only, never a queue. */
public interface ModelRunner extends AutoCloseable {

  /** Runs every chunk of {@code plan} (writing their KV) and samples where a chunk asks for it. */
  RunnerOutput execute(SchedulerOutput plan);

  @Override
  default void close() {}
}
