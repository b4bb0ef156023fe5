package io.moemesh.engine;

import io.moemesh.kernels.Kernels;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.LoadProgress;
import io.moemesh.model.ModelConfig;
import io.moemesh.model.moe.ExpertBackend;
import io.moemesh.model.moe.ExpertSelection;
import java.util.function.Function;

/** A model loaded with its kernels and an {@link Engine} running over it; closing stops the engine, then frees all. */
public final class LoadedEngine implements AutoCloseable {
  private final Kernels kernels;
  private final DeepseekModel model;
  private final Engine engine;
  private final KvCacheConfig kvCache;
  private final int speculativeTokens;

  private LoadedEngine(Kernels kernels, DeepseekModel model, Engine engine, KvCacheConfig kvCache, int speculativeTokens) {
    this.speculativeTokens = speculativeTokens;
    this.kernels = kernels;
    this.model = model;
    this.engine = engine;
    this.kvCache = kvCache;
  }

  /** Loads the model (reporting progress) and starts an engine whose prompt KV goes through {@code connector}. */
  public static LoadedEngine open(EngineSettings s, KvConnector connector, LoadProgress progress) {
    return open(s, connector, ExpertSelection.ALL, DeepseekModel::localExperts, progress);
  }

  /**
   * As {@link #open(EngineSettings, KvConnector, LoadProgress)}, loading only the experts in {@code selection}
   * and reaching the MoE layers' experts through the backend {@code experts} makes for the loaded model.
   */
  public static LoadedEngine open(EngineSettings s, KvConnector connector, ExpertSelection selection,
      Function<DeepseekModel, ExpertBackend> experts, LoadProgress progress) {
    Kernels kernels = s.kernels().open(s.threads());
    try {
      DeepseekModel model = DeepseekModel.load(s.modelDir(), s.precision(), kernels, selection, progress);
      try {
        model.draftVocabulary(s.draftVocabulary());
        var kv = KvCacheConfig.ofBytes(s.kvCacheBytes(), model.newCacheBytesPerToken(), s.pageSize(), s.prefixCaching());
        return new LoadedEngine(kernels, model, Engine.create(EngineSpec.of(model, s.scheduler(), kv)
            .withExperts(experts.apply(model)).withConnector(connector).withMicroBatchThreshold(s.microBatchThreshold())
            .withSpeculativeTokens(s.speculativeTokens())), kv, s.speculativeTokens());
      } catch (RuntimeException e) {
        model.close();
        throw e;
      }
    } catch (RuntimeException e) {
      kernels.close();
      throw e;
    }
  }

  public Engine engine() {
    return engine;
  }

  /** The kernels the model runs on. */
  public Kernels kernels() {
    return kernels;
  }

  public ModelConfig config() {
    return model.config();
  }

  public DeepseekModel model() {
    return model;
  }

  public KvCacheConfig kvCache() {
    return kvCache;
  }

  /** Draft tokens per request and step (MTP speculative decoding), 0 when off. */
  public int speculativeTokens() {
    return speculativeTokens;
  }

  /**
   * Layers of a prompt's KV this engine exports in the prefill role: the main model's, and the MTP layer's after them
   * when it speculates (a decode engine that speculates then imports it too, see {@link KvHandoff.Import}).
   */
  public int numExportedKvLayers() {
    return model.config().numHiddenLayers() + (speculativeTokens > 0 ? 1 : 0);
  }

  @Override
  public void close() {
    engine.close();
    model.close();
    kernels.close();
  }
}
