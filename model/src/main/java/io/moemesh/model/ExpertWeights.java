package io.moemesh.model;

import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.checkpoint.Checkpoint;
import io.moemesh.model.moe.ExpertSelection;
import io.moemesh.model.moe.Placement;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * Just the experts of a checkpoint, for an expert service: a routed shard's experts or the shared experts of
 * every MoE layer (MTP layers included), quantized as the whole model would be. Nothing else is read.
 */
public final class ExpertWeights implements AutoCloseable {
  private final ModelConfig config;
  private final LocalExperts experts;
  private final TensorArena arena;

  private ExpertWeights(ModelConfig config, LocalExperts experts, TensorArena arena) {
    this.config = config;
    this.experts = experts;
    this.arena = arena;
  }

  public static ExpertWeights load(Path dir, Precision precision, Kernels kernels, ExpertSelection selection, LoadProgress progress) {
    ModelConfig config = ModelConfigReader.read(dir.resolve("config.json"));
    TensorArena arena = TensorArena.forModel();
    try (Checkpoint checkpoint = Checkpoint.open(dir)) {
      var loader = new ModelLoader(config, new WeightLoader(checkpoint, config, precision, kernels, arena, progress), precision, selection);
      Map<Integer, Mlp[]> routed = new HashMap<>();
      Map<Integer, Mlp> shared = new HashMap<>();
      for (int i = 0; i < numLayers(config); i++) if (config.isMoeLayer(i)) loader.experts(i, routed, shared);
      return new ExpertWeights(config, new LocalExperts(routed, shared, precision), arena);
    } catch (RuntimeException e) {
      arena.close();
      throw e;
    }
  }

  /** Layer ids of the main model and its MTP layers. */
  public static int numLayers(ModelConfig config) {
    return config.numHiddenLayers() + config.numNextnPredictLayers();
  }

  /** The starting placement of {@code config}'s MoE layers over {@code numShards} shards. */
  public static Placement initialPlacement(ModelConfig config, int numShards, int redundantSlots) {
    boolean[] moe = new boolean[numLayers(config)];
    for (int i = 0; i < moe.length; i++) moe[i] = config.isMoeLayer(i);
    return Placement.initial(moe, config.nRoutedExperts(), numShards, redundantSlots);
  }

  public ModelConfig config() {
    return config;
  }

  public LocalExperts experts() {
    return experts;
  }

  @Override
  public void close() {
    arena.close();
  }
}
