package io.moemesh.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * An MLA decode problem, and the textbook answer to it: softmax attention in double with the max subtracted
 * and natural exp, no paging tricks, no online softmax. The AMLA kernel must agree within F32 rounding.
 *
 * @param qLatent F32 (nq, heads, rank)
 * @param qRope F32 (nq, heads, rope)
 * @param pages F32 or BF16 (numPages, pageSize, rank + rope)
 * @param blockTable I32 (nq, maxPages)
 * @param contextLens I32 (nq)
 */
record Attention(Tensor qLatent, Tensor qRope, Tensor pages, Tensor blockTable, Tensor contextLens) {

  /** Random queries and cache in (−1, 1); row t sees {@code lens[t]} positions on its own shuffled pages. */
  static Attention random(TensorArena arena, Random random, int[] lens, int heads, int rank, int rope, int pageSize,
      int maxPages, DType pagesType) {
    int nq = lens.length;
    int numPages = nq * maxPages;
    List<Integer> order = new ArrayList<>();
    for (int p = 0; p < numPages; p++) order.add(p);
    Collections.shuffle(order, random);
    int[] table = order.stream().mapToInt(Integer::intValue).toArray();
    return new Attention(
        TestTensors.uniform(arena, random, DType.F32, 1, nq, heads, rank),
        TestTensors.uniform(arena, random, DType.F32, 1, nq, heads, rope),
        TestTensors.uniform(arena, random, pagesType, 1, numPages, pageSize, rank + rope),
        arena.ofInts(table, nq, maxPages), arena.ofInts(lens, nq));
  }

  PagedLatentKv kv() {
    return new PagedLatentKv(pages, blockTable, contextLens);
  }

  int rank() {
    return qLatent.rowLength();
  }

  /** The cache row (c_kv ‖ k_pe) of query row t's position p. */
  private float[] token(int t, int p) {
    int pageSize = pages.dim(1);
    int page = blockTable.getInt((long) t * blockTable.rowLength() + p / pageSize);
    int width = pages.rowLength();
    float[] v = new float[width];
    long base = ((long) page * pageSize + p % pageSize) * width;
    for (int i = 0; i < width; i++) v[i] = pages.getFloat(base + i);
    return v;
  }

  /** Natural-base scores (qLatent·c_kv + qRope·k_pe)·scale of query row t, head h, in double. */
  double[] scores(int t, int h, double scale) {
    int heads = qLatent.dim(1);
    int rank = rank();
    int rope = qRope.rowLength();
    double[] s = new double[contextLens.getInt(t)];
    for (int p = 0; p < s.length; p++) {
      float[] token = token(t, p);
      double dot = 0;
      for (int i = 0; i < rank; i++) dot += (double) qLatent.getFloat(((long) t * heads + h) * rank + i) * token[i];
      for (int i = 0; i < rope; i++) dot += (double) qRope.getFloat(((long) t * heads + h) * rope + i) * token[rank + i];
      s[p] = dot * scale;
    }
    return s;
  }

  /** Σ_p softmax(s)_p · c_kv[p] in double, the max subtracted before exp. */
  double[] plainSoftmax(int t, int h, double scale) {
    double[] s = scores(t, h, scale);
    double max = Double.NEGATIVE_INFINITY;
    for (double v : s) max = Math.max(max, v);
    double[] out = new double[rank()];
    double sum = 0;
    for (int p = 0; p < s.length; p++) {
      double weight = Math.exp(s[p] - max);
      sum += weight;
      float[] token = token(t, p);
      for (int i = 0; i < out.length; i++) out[i] += weight * token[i];
    }
    for (int i = 0; i < out.length; i++) out[i] /= sum;
    return out;
  }

  /** max |c_kv| over the positions row t sees: the output is a convex combination of those rows. */
  double largestLatent(int t) {
    double max = 0;
    for (int p = 0; p < contextLens.getInt(t); p++) {
      float[] token = token(t, p);
      for (int i = 0; i < rank(); i++) max = Math.max(max, Math.abs(token[i]));
    }
    return max;
  }

  /**
   * The error scale of output row (t, h): max |c_kv| · (1 + scale · max_p Σ_i |q_i·k_p,i|). The output is a
   * convex combination of c_kv rows (first term), and a score error Δs moves the weights by a factor e^Δs,
   * where Δs from rounding or reordering the score's dot product grows with its Σ|terms| (second term).
   */
  double errorScale(int t, int h, double scale) {
    int heads = qLatent.dim(1);
    int rank = rank();
    int rope = qRope.rowLength();
    double largest = 0;
    for (int p = 0; p < contextLens.getInt(t); p++) {
      float[] token = token(t, p);
      double sum = 0;
      for (int i = 0; i < rank; i++)
        sum += Math.abs((double) qLatent.getFloat(((long) t * heads + h) * rank + i) * token[i]);
      for (int i = 0; i < rope; i++)
        sum += Math.abs((double) qRope.getFloat(((long) t * heads + h) * rope + i) * token[rank + i]);
      largest = Math.max(largest, Math.abs(scale) * sum);
    }
    return largestLatent(t) * (1 + largest);
  }

  /** kernels.mlaDecode agrees with {@link #plainSoftmax} within {@code tolerance} · max |c_kv| everywhere. */
  void assertMatchesPlainSoftmax(Kernels kernels, float scale, double tolerance) {
    int nq = qLatent.dim(0);
    int heads = qLatent.dim(1);
    try (TensorArena scratch = TensorArena.open()) {
      Tensor out = scratch.allocate(DType.F32, nq, heads, rank());
      kernels.mlaDecode(out, qLatent, qRope, kv(), scale);
      for (int t = 0; t < nq; t++) {
        double bound = tolerance * largestLatent(t);
        for (int h = 0; h < heads; h++) {
          double[] expected = plainSoftmax(t, h, scale);
          for (int i = 0; i < expected.length; i++) {
            assertThat((double) out.getFloat(((long) t * heads + h) * rank() + i))
                .as("row %d head %d element %d, scale %s", t, h, i, scale)
                .isCloseTo(expected[i], within(bound));
          }
        }
      }
    }
  }
}
