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

  private LoadedEngine(Kernels kernels, DeepseekModel model, Engine engine, KvCacheConfig kvCache) {
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
        var kv = KvCacheConfig.ofBytes(s.kvCacheBytes(), model.newCacheBytesPerToken(), s.pageSize(), s.prefixCaching());
        return new LoadedEngine(kernels, model, Engine.create(model, experts.apply(model), s.scheduler(), kv, connector, null, s.microBatchThreshold(),
            s.speculativeTokens()), kv);
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

  @Override
  public void close() {
    engine.close();
    model.close();
    kernels.close();
  }
}
