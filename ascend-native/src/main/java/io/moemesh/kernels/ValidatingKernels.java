package io.moemesh.kernels;

import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.DType.F8_E4M3;
import static io.moemesh.kernels.DType.I32;
import static io.moemesh.kernels.DType.I8;

import java.util.Arrays;

/**
 * The shape, dtype and liveness rules of every op, written once: each public op checks its arguments and
 * then calls the implementation's {@code do*} method, which may assume them. Index-valued inputs (expert
 * rows, block tables) are checked by the implementations, which read them anyway.
 */
public abstract class ValidatingKernels implements Kernels {

  @Override
  public final void matmul(Tensor out, Tensor x, Tensor w) {
    var c = new Check("matmul", out, x, w);
    c.dtype(out, "out", F32).dtype(x, "x", F32, BF16).dtype(w, "w", F32, BF16);
    if (x.dtype() == BF16 && w.dtype() != BF16)
      c.fail("a BF16 x needs BF16 weights (a BF16 × BF16 dot product), got x " + x + " with w " + w);
    c.rows(out, x.numRows()).rows(w, out.rowLength()).cols(x, w.rowLength());
    doMatmul(out, x, w);
  }

  @Override
  public final void matmulHeads(Tensor out, Tensor x, Tensor w) {
    var c = headsChecked("matmulHeads", out, x, w, "(heads, m, k)");
    if (w.dim(1) != out.dim(2) || w.dim(2) != x.dim(2)) c.fail("w (heads, m, k) must match out's m and x's k");
    doMatmulHeads(out, x, w);
  }

  @Override
  public final void matmulHeadsKm(Tensor out, Tensor x, Tensor w) {
    var c = headsChecked("matmulHeadsKm", out, x, w, "(heads, k, m)");
    if (w.dim(1) != x.dim(2) || w.dim(2) != out.dim(2)) c.fail("w (heads, k, m) must match x's k and out's m");
    doMatmulHeadsKm(out, x, w);
  }

  @Override
  public final void matmulHeadsKmPairs(Tensor out, Tensor x, Tensor wPairs) {
    var c = new Check("matmulHeadsKmPairs", out, x, wPairs);
    c.dtype(out, "out", F32).dtype(x, "x", BF16).dtype(wPairs, "wPairs", BF16);
    if (out.rank() != 3 || x.rank() != 3) c.fail("out (n, heads, m) and x (n, heads, k) must have rank 3");
    if (x.dim(0) != out.dim(0) || x.dim(1) != out.dim(1)) c.fail("out and x disagree on n or heads");
    int[] pairs = HeadsKmPairs.shape(out.dim(1), x.dim(2), out.dim(2));
    if (!Arrays.equals(wPairs.shape(), pairs) || !wPairs.isContiguous())
      c.fail("wPairs must be the contiguous pairs " + Arrays.toString(pairs) + " of (heads, k, m) weights");
    doMatmulHeadsKmPairs(out, x, wPairs);
  }

  /** What the per-head matmuls share: dtypes, ranks, n and heads, a contiguous w laid out {@code wLayout}. */
  private static Check headsChecked(String op, Tensor out, Tensor x, Tensor w, String wLayout) {
    var c = new Check(op, out, x, w);
    c.dtype(out, "out", F32).dtype(x, "x", F32, BF16).dtype(w, "w", F32, BF16);
    if (x.dtype() == BF16 && w.dtype() != BF16)
      c.fail("a BF16 x needs BF16 weights (a BF16 × BF16 dot product), got x " + x + " with w " + w);
    if (out.rank() != 3 || x.rank() != 3 || w.rank() != 3)
      c.fail("out (n, heads, m), x (n, heads, k) and w " + wLayout + " must have rank 3");
    if (x.dim(0) != out.dim(0) || x.dim(1) != out.dim(1) || w.dim(0) != out.dim(1))
      c.fail("out, x and w disagree on n or heads");
    if (!w.isContiguous()) c.fail("w must be contiguous");
    return c;
  }

  @Override
  public final void quantizeRows(Tensor q, Tensor scales, Tensor x) {
    var c = new Check("quantizeRows", q, scales, x);
    c.dtype(q, "q", I8).dtype(scales, "scales", F32).dtype(x, "x", F32, BF16);
    c.sameMatrix(q, x).elements(scales, x.numRows());
    doQuantizeRows(q, scales, x);
  }

  @Override
  public final void matmulInt8(Tensor out, Tensor xq, Tensor xScales, Tensor w, Tensor wScales) {
    var c = new Check("matmulInt8", out, xq, xScales, w, wScales);
    c.dtype(out, "out", F32).dtype(xq, "xq", I8).dtype(xScales, "xScales", F32).dtype(w, "w", I8)
        .dtype(wScales, "wScales", F32);
    c.rows(out, xq.numRows()).rows(w, out.rowLength()).cols(xq, w.rowLength())
        .elements(xScales, xq.numRows()).elements(wScales, w.numRows());
    doMatmulInt8(out, xq, xScales, w, wScales);
  }

  @Override
  public final void matmulInt8Grouped(Tensor out, Tensor xq, Tensor xScales, Tensor rowOffsets, Tensor[] w,
      Tensor[] wScales) {
    String op = "matmulInt8Grouped";
    var c = new Check(op, out, xq, xScales, rowOffsets);
    c.dtype(out, "out", F32).dtype(xq, "xq", I8).dtype(xScales, "xScales", F32).dtype(rowOffsets, "rowOffsets", I32);
    long n = xq.numRows();
    int m = out.rowLength(), k = xq.rowLength();
    if (out.rank() != 2 || xq.rank() != 2) c.fail("out and xq must be matrices: groups are ranges of their rows");
    c.rows(out, n).elements(xScales, n).elements(rowOffsets, rowOffsets.numElements());
    if (rowOffsets.numElements() < 1) c.fail("rowOffsets needs groups + 1 ≥ 1 entries");
    int groups = Math.toIntExact(rowOffsets.numElements() - 1);
    if (w == null || wScales == null || w.length != groups || wScales.length != groups)
      c.fail("w and wScales need one entry per group (" + groups + "), got " + (w == null ? "null" : w.length)
          + " and " + (wScales == null ? "null" : wScales.length));
    int[] offsets = rowOffsets.toIntArray(); // one bulk read: a decode step validates thousands of groups
    if (offsets[0] != 0) c.fail("rowOffsets[0] = " + offsets[0] + " must be 0");
    if (offsets[groups] != n) c.fail("rowOffsets[" + groups + "] = " + offsets[groups] + " must be n = " + n);
    long ldw = -1;
    for (int g = 0; g < groups; g++) {
      int from = offsets[g], to = offsets[g + 1];
      if (to < from) c.fail("rowOffsets must not decrease: rowOffsets[" + g + "] = " + from + " > rowOffsets[" + (g + 1) + "] = " + to);
      if (to == from) continue;
      if (w[g] == null || wScales[g] == null)
        c.fail("group " + g + " has " + (to - from) + " rows but w[" + g + "] or wScales[" + g + "] is null");
      var cg = c.with(w[g], wScales[g]); // checks the group's own tensors only: a decode step has thousands of groups
      if (w[g].dtype() != I8) cg.dtype(w[g], "w[" + g + "]", I8); // dtypes checked before naming the group
      if (wScales[g].dtype() != F32) cg.dtype(wScales[g], "wScales[" + g + "]", F32);
      cg.rows(w[g], m).cols(w[g], k).elements(wScales[g], m);
      if (ldw >= 0 && w[g].rowStride() != ldw)
        cg.fail("w[" + g + "] has row stride " + w[g].rowStride() + ", the groups before it " + ldw + ": all must share one");
      ldw = w[g].rowStride();
    }
    doMatmulInt8Grouped(out, xq, xScales, rowOffsets, w, wScales);
  }

  @Override
  public final void dequantizeFp8(Tensor out, Tensor w, Tensor scaleInv, int block) {
    var c = new Check("dequantizeFp8", out, w, scaleInv);
    c.dtype(out, "out", F32, BF16).dtype(w, "w", F8_E4M3).dtype(scaleInv, "scaleInv", F32);
    c.sameMatrix(out, w);
    if (block < 1) c.fail("block " + block + " must be positive");
    c.rows(scaleInv, ceilDiv(w.numRows(), block)).cols(scaleInv, ceilDiv(w.rowLength(), block));
    doDequantizeFp8(out, w, scaleInv, block);
  }

  @Override
  public final void rmsNorm(Tensor out, Tensor x, Tensor weight, float eps) {
    var c = new Check("rmsNorm", out, x, weight);
    c.dtype(out, "out", F32).dtype(x, "x", F32).dtype(weight, "weight", F32);
    c.sameMatrix(out, x).elements(weight, x.rowLength());
    if (!(eps > 0)) c.fail("eps " + eps + " must be positive");
    doRmsNorm(out, x, weight, eps);
  }

  @Override
  public final void rope(Tensor x, Tensor positions, RopeTable table) {
    var c = new Check("rope", x, positions, table.cos(), table.sin());
    c.dtype(x, "x", F32).dtype(positions, "positions", I32).dtype(table.cos(), "cos", F32)
        .dtype(table.sin(), "sin", F32).sameMatrix(table.sin(), table.cos())
        .elements(table.cos(), table.cos().numElements()).elements(table.sin(), table.sin().numElements());
    if (x.rank() < 2) c.fail("x must be (n, d) or (n, heads, d)");
    c.elements(positions, x.dim(0)).cols(x, table.ropeDim());
    doRope(x, positions, table);
  }

  @Override
  public final void siluMul(Tensor out, Tensor gate, Tensor up) {
    var c = new Check("siluMul", out, gate, up);
    c.dtype(out, "out", F32).dtype(gate, "gate", F32).dtype(up, "up", F32).sameMatrix(out, gate).sameMatrix(up, gate);
    doSiluMul(out, gate, up);
  }

  @Override
  public final void siluMulQuantize(Tensor q, Tensor scales, Tensor gate, Tensor up) {
    var c = new Check("siluMulQuantize", q, scales, gate, up);
    c.dtype(q, "q", I8).dtype(scales, "scales", F32).dtype(gate, "gate", F32).dtype(up, "up", F32);
    c.sameMatrix(q, gate).sameMatrix(up, gate).elements(scales, gate.numRows());
    doSiluMulQuantize(q, scales, gate, up);
  }

  @Override
  public final void moeGate(Tensor expertIds, Tensor weights, Tensor logits, Tensor bias, GateParams params) {
    var c = bias == null ? new Check("moeGate", expertIds, weights, logits) : new Check("moeGate", expertIds, weights, logits, bias);
    c.dtype(expertIds, "expertIds", I32).dtype(weights, "weights", F32).dtype(logits, "logits", F32);
    int experts = logits.rowLength();
    if (bias != null) c.dtype(bias, "bias", F32).elements(bias, experts);
    if (experts % params.nGroup() != 0) c.fail(experts + " experts do not split into " + params.nGroup() + " groups");
    int perGroup = experts / params.nGroup();
    if (params.nGroup() > 1 && bias != null && perGroup < 2) c.fail("group scoring sums the top-2 scores: groups need ≥ 2 experts");
    if (params.topk() > params.topkGroup() * perGroup)
      c.fail("topk " + params.topk() + " exceeds the " + params.topkGroup() * perGroup + " experts of the kept groups");
    c.rows(expertIds, logits.numRows()).cols(expertIds, params.topk()).sameMatrix(weights, expertIds)
        .elements(expertIds, expertIds.numElements()).elements(weights, weights.numElements());
    doMoeGate(expertIds, weights, logits, bias, params);
  }

  @Override
  public final void mlaDecode(Tensor out, Tensor qLatent, Tensor qRope, PagedLatentKv kv, float softmaxScale) {
    Tensor pages = kv.pages();
    var c = new Check("mlaDecode", out, qLatent, qRope, pages, kv.blockTable(), kv.contextLens());
    c.dtype(out, "out", F32).dtype(qLatent, "qLatent", F32, BF16).dtype(qRope, "qRope", qLatent.dtype()).dtype(pages, "pages", BF16, F32)
        .dtype(kv.blockTable(), "blockTable", I32).dtype(kv.contextLens(), "contextLens", I32);
    if (qLatent.dtype() == BF16 && pages.dtype() != BF16)
      c.fail("a BF16 query needs BF16 pages (a BF16 × BF16 dot product), got qLatent " + qLatent + " with pages " + pages);
    if (qLatent.rank() != 3 || qRope.rank() != 3 || pages.rank() != 3)
      c.fail("qLatent, qRope (nq, heads, ·) and pages (numPages, pageSize, ·) must have rank 3");
    c.sameMatrix(out, qLatent).rows(qRope, qLatent.numRows())
        .cols(pages, qLatent.rowLength() + qRope.rowLength())
        .rows(kv.blockTable(), qLatent.dim(0)).elements(kv.contextLens(), qLatent.dim(0));
    if (!pages.isContiguous()) c.fail("pages must be contiguous");
    doMlaDecode(out, qLatent, qRope, kv, softmaxScale);
  }

  @Override
  public final void attention(Tensor out, Tensor q, Tensor k, Tensor v, Tensor contextLens, float softmaxScale) {
    var c = new Check("attention", out, q, k, v, contextLens);
    c.dtype(out, "out", F32).dtype(q, "q", F32).dtype(k, "k", F32).dtype(v, "v", F32).dtype(contextLens, "contextLens", I32);
    if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3 || out.rank() != 3) c.fail("out, q, k and v must be (rows, heads, dim)");
    if (k.dim(1) != q.dim(1) || v.dim(1) != q.dim(1) || out.dim(1) != q.dim(1)) c.fail("head counts differ");
    c.cols(k, q.rowLength()).rows(v, k.numRows()).rows(out, q.numRows()).cols(out, v.rowLength())
        .elements(contextLens, q.dim(0));
    doAttention(out, q, k, v, contextLens, softmaxScale);
  }

  @Override
  public final void add(Tensor out, Tensor a, Tensor b) {
    var c = new Check("add", out, a, b);
    c.dtype(out, "out", F32).dtype(a, "a", F32).dtype(b, "b", F32).sameMatrix(out, a).sameMatrix(b, a);
    doAdd(out, a, b);
  }

  @Override
  public final void gatherQuantize(Tensor q, Tensor scales, Tensor x, Tensor rows) {
    var c = new Check("gatherQuantize", q, scales, x, rows);
    c.dtype(q, "q", I8).dtype(scales, "scales", F32).dtype(x, "x", F32).dtype(rows, "rows", I32);
    c.rows(q, rows.numElements()).cols(q, x.rowLength()).elements(scales, rows.numElements())
        .elements(rows, rows.numElements());
    doGatherQuantize(q, scales, x, rows);
  }

  @Override
  public final void scatterAdd(Tensor out, Tensor y, Tensor rows, Tensor weights) {
    var c = new Check("scatterAdd", out, y, rows, weights);
    c.dtype(out, "out", F32).dtype(y, "y", F32).dtype(rows, "rows", I32).dtype(weights, "weights", F32);
    c.rows(y, rows.numElements()).cols(y, out.rowLength()).elements(weights, rows.numElements())
        .elements(rows, rows.numElements());
    doScatterAdd(out, y, rows, weights);
  }

  @Override
  public final void convert(Tensor out, Tensor in) {
    var c = new Check("convert", out, in);
    boolean supported = (out.dtype() == BF16 && in.dtype() == F32) || (out.dtype() == F32 && in.dtype() == BF16);
    if (!supported) c.fail("converts F32 ↔ BF16 only, not " + in.dtype() + " → " + out.dtype());
    c.sameMatrix(out, in);
    doConvert(out, in);
  }

  @Override
  public final void argmaxRows(Tensor ids, Tensor x) {
    var c = new Check("argmaxRows", ids, x);
    c.dtype(ids, "ids", I32).dtype(x, "x", F32).elements(ids, x.numRows());
    if (x.rowLength() < 1) c.fail("rows must hold at least one value");
    doArgmaxRows(ids, x);
  }

  protected abstract void doMatmul(Tensor out, Tensor x, Tensor w);

  protected abstract void doMatmulHeads(Tensor out, Tensor x, Tensor w);

  protected abstract void doMatmulHeadsKm(Tensor out, Tensor x, Tensor w);

  protected abstract void doMatmulHeadsKmPairs(Tensor out, Tensor x, Tensor wPairs);

  protected abstract void doQuantizeRows(Tensor q, Tensor scales, Tensor x);

  protected abstract void doMatmulInt8(Tensor out, Tensor xq, Tensor xScales, Tensor w, Tensor wScales);

  /** Arguments checked, offsets included: from 0 to n, non-decreasing; every non-empty group's weights valid. */
  protected abstract void doMatmulInt8Grouped(Tensor out, Tensor xq, Tensor xScales, Tensor rowOffsets, Tensor[] w,
      Tensor[] wScales);

  protected abstract void doDequantizeFp8(Tensor out, Tensor w, Tensor scaleInv, int block);

  protected abstract void doRmsNorm(Tensor out, Tensor x, Tensor weight, float eps);

  protected abstract void doRope(Tensor x, Tensor positions, RopeTable table);

  protected abstract void doSiluMul(Tensor out, Tensor gate, Tensor up);

  protected abstract void doSiluMulQuantize(Tensor q, Tensor scales, Tensor gate, Tensor up);

  protected abstract void doMoeGate(Tensor expertIds, Tensor weights, Tensor logits, Tensor bias, GateParams params);

  protected abstract void doMlaDecode(Tensor out, Tensor qLatent, Tensor qRope, PagedLatentKv kv, float softmaxScale);

  protected abstract void doAttention(Tensor out, Tensor q, Tensor k, Tensor v, Tensor contextLens, float softmaxScale);

  protected abstract void doAdd(Tensor out, Tensor a, Tensor b);

  protected abstract void doGatherQuantize(Tensor q, Tensor scales, Tensor x, Tensor rows);

  protected abstract void doScatterAdd(Tensor out, Tensor y, Tensor rows, Tensor weights);

  protected abstract void doConvert(Tensor out, Tensor in);

  protected abstract void doArgmaxRows(Tensor ids, Tensor x);

  static long ceilDiv(long a, long b) {
    return (a + b - 1) / b;
  }
}
