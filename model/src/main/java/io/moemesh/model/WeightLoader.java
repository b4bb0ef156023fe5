package io.moemesh.model;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.checkpoint.Checkpoint;
import io.moemesh.model.checkpoint.CheckpointException;
import io.moemesh.model.checkpoint.StDType;
import io.moemesh.model.checkpoint.TensorInfo;

/**
 * Turns checkpoint tensors into the forms a {@link Precision} computes with: F32 vectors for norms and
 * biases; matrices as stored (BF16), dequantized from FP8 block scales (F32 in {@code exact}, BF16 in
 * {@code bf16}), or quantized per output channel to INT8 ({@code int8}, for attention projections and
 * experts). Every tensor's shape is checked against the config.
 */
final class WeightLoader {
  private final Checkpoint checkpoint;
  private final ModelConfig config;
  private final Precision precision;
  private final Kernels kernels;
  private final TensorArena arena;
  private final LoadProgress progress;
  private final long totalBytes;
  private long doneBytes;

  WeightLoader(Checkpoint checkpoint, ModelConfig config, Precision precision, Kernels kernels, TensorArena arena, LoadProgress progress) {
    this.checkpoint = checkpoint;
    this.config = config;
    this.precision = precision;
    this.kernels = kernels;
    this.arena = arena;
    this.progress = progress;
    this.totalBytes = checkpoint.names().stream().mapToLong(n -> checkpoint.info(n).byteLength()).sum();
  }

  /** Fresh weight memory for tensors derived at load time (e.g. MLA's absorbed matrices). */
  Tensor allocate(DType dtype, int... shape) {
    return arena.allocate(dtype, shape);
  }

  boolean contains(String name) {
    return checkpoint.contains(name);
  }

  /**
   * Whether the checkpoint's {@code copy} holds the very bytes of {@code original}, so the loaded {@code original} can
   * stand for it; it then counts as read.
   */
  boolean isCopyOf(String copy, String original) {
    if (!checkpoint.contains(copy) || !checkpoint.contains(original) || !checkpoint.sameContents(copy, original)) return false;
    read(checkpoint.info(copy));
    return true;
  }

  /** A vector or matrix as F32 (norm weights, biases), whatever its stored float type. */
  Tensor f32(String name, int... shape) {
    TensorInfo info = info(name, shape);
    Tensor t = arena.allocate(DType.F32, shape);
    checkpoint.readInto(name, t);
    read(info);
    return t;
  }

  /** A matrix in the precision's float form: BF16, or F32 when {@code exact} needs it (FP8 or F32 sources). */
  Tensor matrix(String name, int... shape) {
    TensorInfo info = info(name, shape);
    Tensor t;
    if (info.dtype() == StDType.F8_E4M3) {
      t = arena.allocate(precision == Precision.EXACT ? DType.F32 : DType.BF16, shape);
      dequantize(name, info, t);
    } else if (info.dtype() == StDType.BF16 || (info.dtype() == StDType.F32 && precision == Precision.EXACT)) {
      t = checkpoint.load(name, arena);
    } else if (info.dtype() == StDType.F32 || info.dtype() == StDType.F16) {
      t = arena.allocate(precision == Precision.EXACT ? DType.F32 : DType.BF16, shape);
      try (TensorArena temp = TensorArena.confined()) { // cheap to close, unlike a shared arena
        Tensor f = temp.allocate(DType.F32, shape);
        checkpoint.readInto(name, f);
        if (t.dtype() == DType.F32) t.copyFrom(f);
        else kernels.convert(t, f);
      }
    } else {
      throw new CheckpointException("tensor '" + name + "' has dtype " + info.dtype() + ": weights must be BF16, F16, F32 or F8_E4M3");
    }
    read(info);
    return t;
  }

  /** A projection; INT8 in {@code int8} precision when {@code quantizable}. */
  Linear linear(String prefix, int out, int in, boolean quantizable) {
    String name = prefix + ".weight";
    if (!(quantizable && precision == Precision.INT8)) return Linear.of(matrix(name, out, in), precision);
    Tensor q = arena.allocate(DType.I8, out, in);
    Tensor scales = arena.allocate(DType.F32, out);
    quantizeInto(prefix, q, scales);
    return new Linear(q, scales);
  }

  /**
   * A8W8 projections of one input — an MLP's gate and up, MLA's q and kv down-projections — stored as one matrix of
   * their rows stacked, so all run as one call (vLLM's {@code gate_up_proj}, {@code fused_qkv_a_proj_with_mqa}):
   * {@code {the stack, then each projection}}, each a view of its rows. Per-row scales and exact integer sums make the
   * stack's product the projections' products, bit for bit. Null unless the precision quantizes.
   */
  Linear[] quantizedStack(String[] prefixes, int[] outs, int in) {
    if (precision != Precision.INT8) return null;
    int rows = 0;
    for (int out : outs) rows += out;
    Tensor q = arena.allocate(DType.I8, rows, in);
    Tensor scales = arena.allocate(DType.F32, rows);
    Linear[] linears = new Linear[prefixes.length + 1];
    linears[0] = new Linear(q, scales);
    for (int i = 0, from = 0; i < prefixes.length; from += outs[i], i++) {
      Linear part = new Linear(q.rows(from, from + outs[i]), scales.rows(from, from + outs[i]));
      quantizeInto(prefixes[i], part.weight(), part.scales());
      linears[i + 1] = part;
    }
    return linears;
  }

  /** Quantizes checkpoint matrix {@code prefix.weight} (the shape of q) into q and its per-row scales. */
  private void quantizeInto(String prefix, Tensor q, Tensor scales) {
    String name = prefix + ".weight";
    int out = q.dim(0), in = q.dim(1);
    TensorInfo info = info(name, out, in);
    try (TensorArena temp = TensorArena.confined()) { // cheap to close, unlike a shared arena
      Tensor source;
      if (info.dtype() == StDType.F8_E4M3) {
        source = temp.allocate(DType.F32, out, in);
        dequantize(name, info, source);
      } else {
        source = info.dtype() == StDType.BF16 ? checkpoint.load(name, temp) : temp.allocate(DType.F32, out, in);
        if (source.dtype() == DType.F32) checkpoint.readInto(name, source);
      }
      kernels.quantizeRows(q, scales, source);
    }
    read(info);
  }

  /** An A8W8 projection from a float matrix already loaded (read once, used in two forms). */
  Linear quantize(Tensor matrix) {
    Tensor q = arena.allocate(DType.I8, matrix.shape());
    Tensor scales = arena.allocate(DType.F32, matrix.dim(0));
    kernels.quantizeRows(q, scales, matrix);
    return new Linear(q, scales);
  }

  private void dequantize(String name, TensorInfo info, Tensor out) {
    var quant = config.quantization();
    if (quant == null)
      throw new CheckpointException("tensor '" + name + "' is FP8 but config.json has no quantization_config");
    if (quant.blockRows() != quant.blockCols())
      throw new CheckpointException("FP8 blocks of " + quant.blockRows() + "×" + quant.blockCols() + " are not supported (square blocks only)");
    int block = quant.blockRows(), rows = out.dim(0), cols = out.dim(1);
    String scaleName = name + "_scale_inv";
    if (!checkpoint.contains(scaleName)) throw new CheckpointException("FP8 tensor '" + name + "' has no '" + scaleName + "'");
    try (TensorArena temp = TensorArena.confined()) { // cheap to close, unlike a shared arena
      Tensor w = checkpoint.load(name, temp);
      Tensor scale = temp.allocate(DType.F32, ceilDiv(rows, block), ceilDiv(cols, block));
      info(scaleName, scale.shape());
      checkpoint.readInto(scaleName, scale);
      kernels.dequantizeFp8(out, w, scale, block);
      read(checkpoint.info(scaleName));
    }
  }

  private TensorInfo info(String name, int... shape) {
    if (!checkpoint.contains(name)) throw new CheckpointException("checkpoint has no tensor '" + name + "'");
    TensorInfo info = checkpoint.info(name);
    if (!info.hasShape(shape))
      throw new CheckpointException("tensor '" + name + "' has shape " + info.shapeString() + ", config.json implies "
          + java.util.Arrays.toString(shape).replace('[', '(').replace(']', ')'));
    return info;
  }

  private void read(TensorInfo info) {
    doneBytes += info.byteLength();
    if (progress != null) progress.loaded(Math.min(doneBytes, totalBytes), totalBytes);
  }

  private static int ceilDiv(int a, int b) {
    return (a + b - 1) / b;
  }
}
