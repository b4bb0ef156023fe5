package io.moemesh.engine;

import java.util.function.Consumer;

/**
 * The engine's port to a KV store (docs/architecture.md, "KV cache format and store"). Rows are raw bytes of the
 * cache's dtype, row-major {@code (tokens, kv_lora_rank + qk_rope_head_dim)}, little-endian.
 */
public interface KvConnector {
  /** For engines that neither export nor import. */
  KvConnector NONE = new KvConnector() {
    @Override
    public void saveLayer(String requestId, int layerId, int startPosition, byte[] rows) {
      throw new IllegalStateException("request " + requestId + " exports KV but the engine has no KV connector");
    }

    @Override
    public void load(String requestId, int numTokens, KvSink sink, Consumer<KvLoadResult> done) {
      done.accept(KvLoadResult.failed(KvLoadResult.Reason.NO_CONNECTOR, "the engine has no KV connector to load request " + requestId + "'s KV from"));
    }
  };

  /**
   * Prefill role: one layer's rows for positions {@code [startPosition, startPosition + rows)} of an exporting
   * request, called on the step thread as soon as the layer is computed. The array is the connector's to keep.
   * Rows may come again (a preempted request recomputes its prompt): the bytes are then identical.
   */
  void saveLayer(String requestId, int layerId, int startPosition, byte[] rows);

  /**
   * Fetches the KV of the first {@code numTokens} positions of {@code requestId} — its prompt (decode role) or a
   * prefix of it that a store holds ({@link KvHandoff.Export#prefixTokens}, prefill role) — and writes every
   * layer through {@code sink}, then calls {@code done} exactly once — {@link KvLoadResult#LOADED} or why it
   * failed — from any thread. The request's pages are reserved until then, even if it is aborted meanwhile.
   */
  void load(String requestId, int numTokens, KvSink sink, Consumer<KvLoadResult> done);

  /** Writes loaded rows into a request's reserved pages; safe to call from the connector's threads. */
  interface KvSink {
    /**
     * @throws IllegalArgumentException for a layer or positions outside the request's reservation, or rows that
     *     are not whole rows of the cache's dtype
     */
    void writeLayer(int layerId, int startPosition, byte[] rows);

    /** The cache's element type: rows must be in it. */
    io.moemesh.kernels.DType dtype();

    /** Values per token and layer ({@code kv_lora_rank + qk_rope_head_dim}). */
    int latentDim();

    /** Layers to load. */
    int numLayers();
  }
}
