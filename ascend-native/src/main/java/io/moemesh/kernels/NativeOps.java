package io.moemesh.kernels;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.invoke.MethodHandle;

/** Downcall handles of mesh_kernels.h, looked up once when the class initializes. */
final class NativeOps {
  private NativeOps() {}

  private static final NativeLibrary LIB = NativeLibrary.load();

  static final MethodHandle CPU_SUPPORTS = fn("mk_cpu_supports", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
  static final MethodHandle CONTEXT_CREATE = fn("mk_context_create", FunctionDescriptor.of(ADDRESS, JAVA_INT, JAVA_INT));
  static final MethodHandle CONTEXT_DESTROY = fn("mk_context_destroy", FunctionDescriptor.ofVoid(ADDRESS));
  static final MethodHandle CONTEXT_ISA = fn("mk_context_isa", FunctionDescriptor.of(JAVA_INT, ADDRESS));
  static final MethodHandle INT8_PEAK_OPS = fn("mk_int8_peak_ops", FunctionDescriptor.of(JAVA_DOUBLE, ADDRESS, JAVA_LONG));
  static final MethodHandle BF16_PEAK_OPS = fn("mk_bf16_peak_ops", FunctionDescriptor.of(JAVA_DOUBLE, ADDRESS, JAVA_LONG));
  static final MethodHandle STREAM_TRIAD = fn("mk_stream_triad",
      FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_FLOAT));

  // Kernel ops: (context, ...) -> MK_OK or MK_E_*
  static final MethodHandle MATMUL = op("mk_matmul", ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS,
      JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG);
  static final MethodHandle MATMUL_HEADS = op("mk_matmul_heads", ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT, JAVA_LONG,
      ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG);
  static final MethodHandle MATMUL_HEADS_KM = op("mk_matmul_heads_km", ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT, JAVA_LONG,
      ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG);
  static final MethodHandle MATMUL_HEADS_KM_PAIRS = op("mk_matmul_heads_km_pairs", ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG,
      ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG);
  static final MethodHandle QUANTIZE_ROWS = op("mk_quantize_rows", ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_INT,
      JAVA_LONG, JAVA_LONG, JAVA_LONG);
  static final MethodHandle MATMUL_I8 = op("mk_matmul_i8", ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS,
      JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG);
  static final MethodHandle MATMUL_I8_GROUPED = op("mk_matmul_i8_grouped", ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG,
      ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG);
  static final MethodHandle DEQUANT_FP8 = op("mk_dequant_fp8", ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG,
      ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG);
  static final MethodHandle RMS_NORM = op("mk_rms_norm", ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_FLOAT,
      JAVA_LONG, JAVA_LONG);
  static final MethodHandle ROPE = op("mk_rope", ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS,
      JAVA_LONG, JAVA_LONG);
  static final MethodHandle SILU_MUL = op("mk_silu_mul", ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG,
      JAVA_LONG, JAVA_LONG);
  static final MethodHandle SILU_MUL_QUANTIZE = op("mk_silu_mul_quantize", ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG,
      ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG);
  static final MethodHandle MOE_GATE = op("mk_moe_gate", ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG,
      JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_FLOAT);
  static final MethodHandle MLA_DECODE = op("mk_mla_decode", ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG,
      JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG,
      ADDRESS, JAVA_FLOAT);
  static final MethodHandle ATTENTION = op("mk_attention", ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG,
      ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_FLOAT);
  static final MethodHandle ADD = op("mk_add", ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG);
  static final MethodHandle GATHER_QUANTIZE = op("mk_gather_quantize", ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG,
      JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG);
  static final MethodHandle SCATTER_ADD = op("mk_scatter_add", ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG,
      ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG);
  static final MethodHandle ARGMAX_ROWS = op("mk_argmax_rows", ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG);
  static final MethodHandle CONVERT = op("mk_convert", ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS, JAVA_INT, JAVA_LONG,
      JAVA_LONG, JAVA_LONG);

  /** The meaning of an MK_E_* code. */
  static String describe(int rc) {
    return switch (rc) {
      case -1 -> "MK_E_NULL: a required pointer is null";
      case -2 -> "MK_E_SHAPE: a size is negative or inconsistent";
      case -3 -> "MK_E_INDEX: an index (row id, page id, position or context length) is out of range";
      case -4 -> "MK_E_DTYPE: unsupported dtype";
      case -5 -> "MK_E_NOMEM: native scratch memory could not be allocated";
      case -6 -> "MK_E_THREADS: the thread pool could not start";
      default -> "native error " + rc;
    };
  }

  private static MethodHandle op(String name, java.lang.foreign.MemoryLayout... args) {
    var all = new java.lang.foreign.MemoryLayout[args.length + 1];
    all[0] = ADDRESS;
    System.arraycopy(args, 0, all, 1, args.length);
    return fn(name, FunctionDescriptor.of(JAVA_INT, all));
  }

  private static MethodHandle fn(String name, FunctionDescriptor descriptor) {
    return LIB.function(name, descriptor);
  }
}
