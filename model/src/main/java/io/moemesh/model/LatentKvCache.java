package io.moemesh.model;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;

/**
 * The paged latent KV cache of every attention layer (the main layers, then the MTP layers): per token and
 * layer only {@code c_kv ‖ k_pe} ({@code kv_lora_rank + qk_rope_head_dim} values), BF16 or F32. Page
 * allocation is the engine's business; this holds the memory and moves rows in and out.
 */
public final class LatentKvCache {
  private final Tensor[] pages; // per layer: (numPages, pageSize, latentDim)
  private final Tensor[] slots; // the same per layer as rows: (numPages · pageSize, latentDim), slot = page · pageSize + offset
  private final int pageSize;

  private LatentKvCache(Tensor[] pages, int pageSize) {
    this.pages = pages;
    this.pageSize = pageSize;
    this.slots = new Tensor[pages.length];
    for (int l = 0; l < pages.length; l++) slots[l] = pages[l].reshape(pages[l].dim(0) * pageSize, pages[l].dim(2));
  }

  public static LatentKvCache allocate(TensorArena arena, ModelConfig config, DType dtype, int numLayers, int numPages, int pageSize) {
    if (dtype != DType.F32 && dtype != DType.BF16) throw new IllegalArgumentException("KV cache must be F32 or BF16, got " + dtype);
    if (numPages < 1 || pageSize < 1) throw new IllegalArgumentException("need ≥ 1 page of ≥ 1 token");
    Tensor[] pages = new Tensor[numLayers];
    for (int l = 0; l < numLayers; l++) pages[l] = arena.allocate(dtype, numPages, pageSize, config.latentDim());
    return new LatentKvCache(pages, pageSize);
  }

  public Tensor pages(int layerId) {
    return pages[layerId];
  }

  public int pageSize() {
    return pageSize;
  }

  public int numPages() {
    return pages[0].dim(0);
  }

  public int numLayers() {
    return pages.length;
  }

  public DType dtype() {
    return pages[0].dtype();
  }

  /** Bytes one token occupies across all layers. */
  public long bytesPerToken() {
    return (long) pages.length * pages[0].dim(2) * pages[0].dtype().byteSize();
  }

  /**
   * Stores each row of {@code latent} (F32, one row per row of the batch) at that row's position in its sequence:
   * one conversion to the cache's dtype for the whole batch (a conversion per row cost a kernel call each, 512 of
   * them in a 32-sequence decode step), then a copy per page a chunk's consecutive positions fall in (a copy per row
   * was a tenth of a prompt step's Java).
   */
  void write(Kernels k, int layerId, ForwardBatch batch, Tensor latent, TensorArena scratch) {
    Tensor rows = dtype() == DType.F32 ? latent : scratch.empty(dtype(), latent.dim(0), latent.dim(1));
    if (rows != latent) k.convert(rows, latent);
    for (ForwardBatch.SequenceChunk s : batch.sequences()) {
      int first = s.firstRow();
      forEachRun(s.blockTable(), batch.positions()[first], s.numRows(),
          (slots, at) -> slots.copyFrom(rows.rows(first + at, first + at + slots.dim(0))), layerId);
    }
  }

  /** Copies positions {@code [0, count)} of a sequence into {@code out} (F32, (count, latentDim)). */
  void read(Kernels k, int layerId, int[] blockTable, int count, Tensor out) {
    for (int start = 0; start < count; start += pageSize) {
      int n = Math.min(pageSize, count - start);
      Tensor src = pageRows(layerId, blockTable[start / pageSize], n);
      Tensor dst = out.rows(start, start + n);
      if (src.dtype() == DType.F32) dst.copyFrom(src);
      else k.convert(dst, src);
    }
  }

  /**
   * The raw bytes (cache dtype, little-endian, row-major {@code (count, latentDim)}) of positions
   * {@code [from, from + count)} of one layer of a sequence: what KV transfer ships.
   */
  public byte[] readRows(int layerId, int[] blockTable, int from, int count) {
    int rowBytes = pages[layerId].dim(2) * dtype().byteSize();
    byte[] out = new byte[count * rowBytes];
    forEachRun(blockTable, from, count, (rows, at) -> rows.asReadOnlyBytes().get(out, at * rowBytes, rows.dim(0) * rowBytes), layerId);
    return out;
  }

  /** Stores rows produced by {@link #readRows} (same dtype and latent width) at positions {@code [from, from + n)}. */
  public void writeRows(int layerId, int[] blockTable, int from, byte[] data) {
    int rowBytes = pages[layerId].dim(2) * dtype().byteSize();
    if (data.length % rowBytes != 0)
      throw new IllegalArgumentException(data.length + " bytes are not whole rows of " + rowBytes + " bytes (" + dtype() + ")");
    int count = data.length / rowBytes;
    if ((from + count + pageSize - 1) / pageSize > blockTable.length)
      throw new IllegalArgumentException("positions up to " + (from + count) + " need more than the " + blockTable.length + " page(s) given");
    forEachRun(blockTable, from, count,
        (rows, at) -> rows.copyFromBytes(java.nio.ByteBuffer.wrap(data, at * rowBytes, rows.dim(0) * rowBytes)), layerId);
  }

  private interface RowRun {
    void accept(Tensor rows, int offset);
  }

  /** Calls {@code run} for each page-contiguous run of positions {@code [from, from + count)}, with its offset in the range. */
  private void forEachRun(int[] blockTable, int from, int count, RowRun run, int layerId) {
    Tensor flat = slots[layerId];
    for (int p = from; p < from + count; ) {
      int inPage = Math.min(pageSize - p % pageSize, from + count - p);
      int row = blockTable[p / pageSize] * pageSize + p % pageSize;
      run.accept(flat.rows(row, row + inPage), p - from);
      p += inPage;
    }
  }

  private Tensor pageRows(int layerId, int page, int n) {
    return slots[layerId].rows(page * pageSize, page * pageSize + n);
  }
}
