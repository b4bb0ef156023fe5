package io.moemesh.engine;

/** Runs one step's plan through the model: math only, never a queue. */
public interface ModelRunner extends AutoCloseable {

  /** Runs every chunk of {@code plan} (writing their KV) and samples where a chunk asks for it. */
  RunnerOutput execute(SchedulerOutput plan);

  /**
   * Where a KV load writes a request's prompt rows: its pages {@code blockTable}, positions below {@code numTokens}, the
   * main model's layers and, {@code withMtpLayer}, the MTP layer (numbered right after them).
   */
  default KvConnector.KvSink kvSink(int[] blockTable, int numTokens, boolean withMtpLayer) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot take loaded KV");
  }

  @Override
  default void close() {}
}
