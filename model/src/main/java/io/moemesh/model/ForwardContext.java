package io.moemesh.model;

import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.RopeTable;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.moe.ExpertBackend;

/**
 * What every layer of one forward pass reads besides its input, made once per pass by {@link DeepseekModel}, so a
 * layer's call reads as the reference's {@code Block.forward(x, start_pos, freqs_cis, mask)}: {@code layer.forward(x, ctx)}.
 *
 * @param batch the rows the pass computes
 * @param positions I32 (rows of batch): the batch's positions, as the kernels take them
 * @param rope (max_position_embeddings, rope / 2)
 * @param cache where attention writes the rows' KV and reads their context
 * @param experts who computes the MoE layers' experts
 * @param eps the RMSNorms' epsilon ({@code rms_norm_eps})
 * @param scratch where the pass's temporaries live
 */
public record ForwardContext(Kernels kernels, ForwardBatch batch, Tensor positions, RopeTable rope, LatentKvCache cache,
    ExpertBackend experts, float eps, TensorArena scratch) {

  /** A pass over {@code batch}, its positions put in {@code scratch}. */
  static ForwardContext of(Kernels kernels, ForwardBatch batch, RopeTable rope, LatentKvCache cache, ExpertBackend experts,
      float eps, TensorArena scratch) {
    return new ForwardContext(kernels, batch, scratch.ofInts(batch.positions(), batch.numRows()), rope, cache, experts, eps, scratch);
  }

  /** The same pass over some of its rows ({@link ForwardBatch#rows}), their positions put in its scratch. */
  ForwardContext over(ForwardBatch rows) {
    return of(kernels, rows, rope, cache, experts, eps, scratch);
  }
}
