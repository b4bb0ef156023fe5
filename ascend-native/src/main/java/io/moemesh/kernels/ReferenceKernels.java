package io.moemesh.kernels;

import static io.moemesh.kernels.ReferenceRows.byteRow;
import static io.moemesh.kernels.ReferenceRows.dot;
import static io.moemesh.kernels.ReferenceRows.elements;
import static io.moemesh.kernels.ReferenceRows.ints;
import static io.moemesh.kernels.ReferenceRows.row;
import static io.moemesh.kernels.ReferenceRows.store;
import static io.moemesh.kernels.ReferenceRows.storeBytes;

/**
 * The spec: every op of {@link Kernels} in plain scalar Java, one loop nest per formula, readable next to
 * DeepSeek-V3's {@code inference/model.py}. Every other implementation is tested against this one
 * ({@code KernelsContract}); it is also the always-available fallback of {@link KernelBackend}.
 *
 * <p>Arithmetic is F32 in a fixed order: each sum runs j = 0, 1, … one term at a time, and a·b + c rounds
 * twice (Java never fuses; the C twin is built with {@code -ffp-contract=off}), so the INT8 paths of a
 * native twin can agree bit for bit. NaN and infinite inputs are outside the contract.
 *
 * <p>Each op reads a row into a Java array, computes on arrays and writes the row back, so an output may
 * alias its input where the op allows it, and no row ever sees another. Index inputs (positions, page ids,
 * expert rows) are all checked before anything is written.
 *
 * <p>This class is the list of ops. The longer formulas live beside it: the MoE gate's routing in
 * {@link ReferenceGate}, the attention softmaxes (AMLA's for mlaDecode) in {@link ReferenceAttention}, and
 * the row reads and writes and the F32 dot product in {@link ReferenceRows}.
 */
public final class ReferenceKernels extends ValidatingKernels {
  @Override
  public String name() {
    return "reference";
  }

  // ---- linear ---------------------------------------------------------------------------------------------

  /**
   * out[t][o] = Σ_j x[t][j]·w[o][j], summed in F32 for j = 0 … k-1 (BF16 weights upcast exactly). A BF16 x
   * is upcast exactly too, and then each product of two BF16 values is exact in F32 (8 + 8 significant bits ≤
   * 24): the BF16 × BF16 spec is the same index-order F32 sum of exact products, so it equals the F32 path
   * run on the upcast x, bit for bit. (No subnormal flushing here: the contract is tolerance-based.)
   */
  @Override
  protected void doMatmul(Tensor out, Tensor x, Tensor w) {
    int m = out.rowLength();
    for (long t = 0; t < x.numRows(); t++) {
      float[] xt = row(x, t);
      float[] outT = new float[m];
      for (int o = 0; o < m; o++) outT[o] = dot(xt, row(w, o), 0);
      store(out, t, outT);
    }
  }

  /** Head by head, exactly {@link #doMatmul} on the head's rows against its weights. */
  @Override
  protected void doMatmulHeads(Tensor out, Tensor x, Tensor w) {
    int heads = w.dim(0), m = w.dim(1);
    for (long t = 0; t < x.dim(0); t++) {
      for (int h = 0; h < heads; h++) {
        long r = t * heads + h;
        float[] xr = row(x, r);
        float[] outR = new float[m];
        for (int o = 0; o < m; o++) outR[o] = dot(xr, row(w, (long) h * m + o), 0);
        store(out, r, outR);
      }
    }
  }

  /** Each output in column order, in F32: {@code acc = acc + x[c] · w[c][o]}, one rounding per multiply and per add. */
  @Override
  protected void doMatmulHeadsKm(Tensor out, Tensor x, Tensor w) {
    int heads = w.dim(0), k = w.dim(1), m = w.dim(2);
    for (long t = 0; t < x.dim(0); t++) {
      for (int h = 0; h < heads; h++) {
        long r = t * heads + h;
        float[] xr = row(x, r);
        float[] outR = new float[m];
        for (int c = 0; c < k; c++) {
          float[] wc = row(w, (long) h * k + c);
          for (int o = 0; o < m; o++) outR[o] = outR[o] + xr[c] * wc[o];
        }
        store(out, r, outR);
      }
    }
  }

  @Override
  protected void doMatmulHeadsKmPairs(Tensor out, Tensor x, Tensor wPairs) {
    try (TensorArena scratch = TensorArena.confined()) { // the spec: matmulHeadsKm on the weights the pairs hold
      Tensor w = scratch.allocate(DType.BF16, out.dim(1), x.dim(2), out.dim(2));
      HeadsKmPairs.unpair(w, wPairs);
      doMatmulHeadsKm(out, x, w);
    }
  }

  @Override
  protected void doQuantizeRows(Tensor q, Tensor scales, Tensor x) {
    for (long t = 0; t < x.numRows(); t++) {
      QuantizedRow qt = quantize(row(x, t));
      storeBytes(q, t, qt.q());
      scales.setFloat(t, qt.scale());
    }
  }

  /** out[t][o] = (float) Σ_j xq[t][j]·w[o][j] (exact INT32) · xScales[t] · wScales[o], left to right in F32. */
  @Override
  protected void doMatmulInt8(Tensor out, Tensor xq, Tensor xScales, Tensor w, Tensor wScales) {
    int m = out.rowLength();
    for (long t = 0; t < xq.numRows(); t++) {
      byte[] xt = byteRow(xq, t);
      float[] outT = new float[m];
      for (int o = 0; o < m; o++) {
        byte[] wo = byteRow(w, o);
        int acc = 0;
        for (int j = 0; j < xt.length; j++) acc += xt[j] * wo[j];
        outT[o] = (float) acc * xScales.getFloat(t) * wScales.getFloat(o);
      }
      store(out, t, outT);
    }
  }

  /** Group by group, exactly {@link #doMatmulInt8} on the group's rows; groups without rows are skipped. */
  @Override
  protected void doMatmulInt8Grouped(Tensor out, Tensor xq, Tensor xScales, Tensor rowOffsets, Tensor[] w,
      Tensor[] wScales) {
    for (int g = 0; g < w.length; g++) {
      int from = rowOffsets.getInt(g), to = rowOffsets.getInt(g + 1);
      if (to > from) doMatmulInt8(out.rows(from, to), xq.rows(from, to), xScales.rows(from, to), w[g], wScales[g]);
    }
  }

  /** out[i][j] = fp8(w[i][j]) · scaleInv[i / block][j / block] in F32; a BF16 out rounds to nearest even. */
  @Override
  protected void doDequantizeFp8(Tensor out, Tensor w, Tensor scaleInv, int block) {
    int k = w.rowLength();
    for (long i = 0; i < w.numRows(); i++) {
      byte[] wi = byteRow(w, i);
      float[] scalesOfRow = row(scaleInv, i / block);
      float[] outI = new float[k];
      for (int j = 0; j < k; j++) outI[j] = Fp8E4M3.toFloat(wi[j]) * scalesOfRow[j / block];
      store(out, i, outI);
    }
  }

  // ---- per row --------------------------------------------------------------------------------------------

  /**
   * out = x · r · weight with r = 1 / sqrt(Σx² / d + eps): the sum of squares in F32, j = 0 … d-1; then
   * {@code sumsq / d + eps} in F32, a correctly rounded F32 square root ({@code sqrtf}) and an F32 division.
   */
  @Override
  protected void doRmsNorm(Tensor out, Tensor x, Tensor weight, float eps) {
    float[] w = elements(weight);
    for (long t = 0; t < x.numRows(); t++) {
      float[] xt = row(x, t);
      float sumsq = 0f;
      for (float v : xt) sumsq += v * v;
      float r = 1f / (float) Math.sqrt(sumsq / xt.length + eps);
      for (int j = 0; j < xt.length; j++) xt[j] = xt[j] * r * w[j];
      store(out, t, xt);
    }
  }

  /**
   * Rotates each pair (x[2i], x[2i+1]) by the table's angle for the row's position: x0' = x0·cos − x1·sin,
   * x1' = x0·sin + x1·cos. In an (n, heads, d) tensor all heads of token t use positions[t].
   */
  @Override
  protected void doRope(Tensor x, Tensor positions, RopeTable table) {
    int[] pos = ints(positions);
    for (int t = 0; t < pos.length; t++) {
      if (pos[t] < 0 || pos[t] >= table.maxPositions())
        throw new KernelException("rope", "row " + t + ": position " + pos[t] + " is outside the table's [0, "
            + table.maxPositions() + ")");
    }
    if (pos.length == 0) return;
    long rowsPerPosition = x.numRows() / pos.length; // heads
    for (long r = 0; r < x.numRows(); r++) {
      int p = pos[Math.toIntExact(r / rowsPerPosition)];
      float[] cos = row(table.cos(), p);
      float[] sin = row(table.sin(), p);
      float[] v = row(x, r);
      for (int i = 0; i < cos.length; i++) {
        float x0 = v[2 * i];
        float x1 = v[2 * i + 1];
        v[2 * i] = x0 * cos[i] - x1 * sin[i];
        v[2 * i + 1] = x0 * sin[i] + x1 * cos[i];
      }
      store(x, r, v);
    }
  }

  /** out = gate / (1 + e^-gate) · up, with e^-gate the F32 rounding of {@link Math#exp}. */
  @Override
  protected void doSiluMul(Tensor out, Tensor gate, Tensor up) {
    for (long t = 0; t < gate.numRows(); t++) store(out, t, siluMul(row(gate, t), row(up, t)));
  }

  @Override
  protected void doSiluMulQuantize(Tensor q, Tensor scales, Tensor gate, Tensor up) {
    for (long t = 0; t < gate.numRows(); t++) {
      QuantizedRow qt = quantize(siluMul(row(gate, t), row(up, t)));
      storeBytes(q, t, qt.q());
      scales.setFloat(t, qt.scale());
    }
  }

  private static float[] siluMul(float[] g, float[] u) {
    float[] out = new float[g.length];
    for (int j = 0; j < g.length; j++) out[j] = g[j] / (1f + (float) Math.exp(-g[j])) * u[j];
    return out;
  }

  @Override
  protected void doMoeGate(Tensor expertIds, Tensor weights, Tensor logits, Tensor bias, GateParams params) {
    float[] b = bias == null ? null : elements(bias);
    for (long t = 0; t < logits.numRows(); t++) {
      var route = ReferenceGate.route(row(logits, t), b, params);
      for (int k = 0; k < params.topk(); k++) {
        expertIds.setInt(t * params.topk() + k, route.expertIds()[k]);
        weights.setFloat(t * params.topk() + k, route.weights()[k]);
      }
    }
  }

  @Override
  protected void doMlaDecode(Tensor out, Tensor qLatent, Tensor qRope, PagedLatentKv kv, float softmaxScale) {
    int heads = qLatent.dim(1);
    var sequences = ReferenceAttention.sequences(kv, qLatent.dim(0)); // every row checked before anything is written
    boolean bf16Weights = qLatent.dtype() == DType.BF16;
    for (int t = 0; t < sequences.length; t++) {
      for (int h = 0; h < heads; h++) {
        long r = (long) t * heads + h;
        store(out, r, ReferenceAttention.attend(row(qLatent, r), row(qRope, r), kv, sequences[t], softmaxScale,
            bf16Weights));
      }
    }
  }

  /**
   * MLA's naive form: for query row t and head h, scores s_j = (q[t,h]·k[j,h])·softmaxScale for the key rows
   * j < contextLens[t] (dot in F32, j-order sums), then DeepSeek's F32 softmax — subtract the max, e^(s − max)
   * as the F32 rounding of {@link Math#exp}, sum in order, divide — and out[t,h] = Σ_j p_j·v[j,h] summed in
   * j order, product then sum.
   */
  @Override
  protected void doAttention(Tensor out, Tensor q, Tensor k, Tensor v, Tensor contextLens, float softmaxScale) {
    int heads = q.dim(1);
    int[] lens = ints(contextLens);
    for (int t = 0; t < lens.length; t++) { // every row checked before anything is written
      if (lens[t] < 1 || lens[t] > k.dim(0))
        throw new KernelException("attention", "row " + t + ": context length " + lens[t] + " is outside [1, "
            + k.dim(0) + "]");
    }
    for (int t = 0; t < lens.length; t++) {
      for (int h = 0; h < heads; h++) {
        float[] query = row(q, (long) t * heads + h);
        float[] p = new float[lens[t]];
        for (int j = 0; j < p.length; j++) p[j] = dot(query, row(k, (long) j * heads + h), 0) * softmaxScale;
        ReferenceAttention.softmax(p);
        float[] o = new float[v.rowLength()];
        for (int j = 0; j < p.length; j++) {
          float[] value = row(v, (long) j * heads + h);
          for (int i = 0; i < o.length; i++) o[i] = o[i] + p[j] * value[i];
        }
        store(out, (long) t * heads + h, o);
      }
    }
  }

  /** out = a + b in F32; out may alias a or b (each row is read before it is written). */
  @Override
  protected void doAdd(Tensor out, Tensor a, Tensor b) {
    for (long r = 0; r < a.numRows(); r++) {
      float[] x = row(a, r);
      float[] y = row(b, r);
      for (int j = 0; j < x.length; j++) x[j] = x[j] + y[j];
      store(out, r, x);
    }
  }

  @Override
  protected void doGatherQuantize(Tensor q, Tensor scales, Tensor x, Tensor rows) {
    int[] source = ints(rows);
    checkRows("gatherQuantize", source, x.numRows());
    for (int i = 0; i < source.length; i++) {
      QuantizedRow qi = quantize(row(x, source[i]));
      storeBytes(q, i, qi.q());
      scales.setFloat(i, qi.scale());
    }
  }

  /** For i = 0, 1, … in order: out[rows[i]][j] = out[rows[i]][j] + weights[i]·y[i][j] (product, then sum). */
  @Override
  protected void doScatterAdd(Tensor out, Tensor y, Tensor rows, Tensor weights) {
    int[] target = ints(rows);
    checkRows("scatterAdd", target, out.numRows());
    for (int i = 0; i < target.length; i++) {
      float[] o = row(out, target[i]);
      float[] yi = row(y, i);
      float w = weights.getFloat(i);
      for (int j = 0; j < o.length; j++) o[j] = o[j] + w * yi[j];
      store(out, target[i], o);
    }
  }

  @Override
  protected void doArgmaxRows(Tensor ids, Tensor x) {
    for (long r = 0; r < x.numRows(); r++) ids.setInt(r, argmax(row(x, r)));
  }

  /** The first index whose value beats every earlier one (ties: the lowest); -1 for a NaN, +∞ or only -∞. */
  static int argmax(float[] v) {
    int best = -1;
    float max = Float.NEGATIVE_INFINITY;
    for (int j = 0; j < v.length; j++) {
      if (Float.isNaN(v[j]) || v[j] == Float.POSITIVE_INFINITY) return -1;
      if (v[j] > max) {
        max = v[j];
        best = j;
      }
    }
    return best;
  }

  /** F32 → BF16 rounds to nearest even ({@link BFloat16#fromFloat}); BF16 → F32 is exact. */
  @Override
  protected void doConvert(Tensor out, Tensor in) {
    for (long r = 0; r < in.numRows(); r++) store(out, r, row(in, r));
  }

  // ---- INT8 quantization ----------------------------------------------------------------------------------

  record QuantizedRow(byte[] q, float scale) {}

  /**
   * Symmetric INT8 of one row: amax = max|x|; if amax = 0, scale 0 and q 0; else inv = 127 / amax (F32),
   * q = clamp(rint(x·inv), −127, 127) with x·inv an F32 product and rint ties-to-even, scale = amax / 127.
   */
  static QuantizedRow quantize(float[] x) {
    float amax = 0f;
    for (float v : x) amax = Math.max(amax, Math.abs(v));
    byte[] q = new byte[x.length];
    if (amax == 0f) return new QuantizedRow(q, 0f);
    float inv = 127f / amax;
    for (int j = 0; j < x.length; j++) q[j] = (byte) Math.clamp(Math.rint(x[j] * inv), -127, 127);
    return new QuantizedRow(q, amax / 127f);
  }

  // ---- helpers --------------------------------------------------------------------------------------------

  private static void checkRows(String op, int[] rows, long numRows) {
    for (int i = 0; i < rows.length; i++) {
      if (rows[i] < 0 || rows[i] >= numRows)
        throw new KernelException(op, "rows[" + i + "] = " + rows[i] + " is outside [0, " + numRows + ")");
    }
  }
}
