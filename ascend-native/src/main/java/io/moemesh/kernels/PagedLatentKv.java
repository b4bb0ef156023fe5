package io.moemesh.kernels;

/**
 * One layer's paged latent KV cache and, per query row, which pages and how many positions it sees.
 *
 * @param pages BF16 or F32 (numPages, pageSize, kvLoraRank + ropeDim): per token {@code c_kv ‖ k_pe}
 * @param blockTable I32 (nq, maxPagesPerRow): page ids of query row t's sequence, in position order
 * @param contextLens I32 (nq): positions query row t attends to (≥ 1; causal masking for several query
 *     rows of one sequence is expressed by giving each its own length)
 */
public record PagedLatentKv(Tensor pages, Tensor blockTable, Tensor contextLens) {
  public int pageSize() {
    return pages.dim(1);
  }
}
