package io.moemesh.kernels;

import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.DType.I8;
import static io.moemesh.kernels.DType.I32;

import java.util.List;
import java.util.Random;
import java.util.function.Consumer;

/** One small, valid call of every op of {@link Kernels}: for checks that must hold op by op. */
final class SampleCalls {
  private SampleCalls() {}

  /** A call of {@code op} that writes {@code outputs} (rope: in place). */
  record SampleCall(String op, List<Tensor> outputs, Consumer<Kernels> call) {
    @Override
    public String toString() {
      return op;
    }
  }

  /** Every op once, its outputs allocated in {@code out} and all its inputs in {@code in}. */
  static List<SampleCall> all(TensorArena out, TensorArena in) {
    var random = new Random(7);
    Tensor x = TestTensors.uniform(in, random, F32, 1, 3, 8);
    Tensor w = TestTensors.uniform(in, random, BF16, 1, 5, 8);
    Tensor xq = TestTensors.int8(in, random, 3, 8);
    Tensor xScales = TestTensors.uniform(in, random, F32, 1, 3);
    Tensor wq = TestTensors.int8(in, random, 5, 8);
    Tensor wScales = TestTensors.uniform(in, random, F32, 1, 5);
    Tensor fp8 = TestTensors.fp8(in, random, 5, 8);
    Tensor scaleInv = TestTensors.uniform(in, random, F32, 1, 2, 2);
    Tensor normWeight = TestTensors.uniform(in, random, F32, 1, 8);
    Tensor positions = in.ofInts(new int[] {0, 1, 2}, 3);
    RopeTable table = RopeTable.of(in, new float[] {1f, 0.1f, 0.01f, 0.001f}, 4);
    Tensor logits = TestTensors.uniform(in, random, F32, 4, 3, 8);
    Tensor bias = TestTensors.uniform(in, random, F32, 1, 8);
    Tensor pages = TestTensors.uniform(in, random, BF16, 1, 4, 2, 6);
    Tensor blockTable = in.ofInts(new int[] {0, 1, 2, 3, 1, 0}, 3, 2);
    Tensor contextLens = in.ofInts(new int[] {1, 3, 4}, 3);
    var kv = new PagedLatentKv(pages, blockTable, contextLens);
    Tensor qLatent = TestTensors.uniform(in, random, F32, 1, 3, 2, 4);
    Tensor qRope = TestTensors.uniform(in, random, F32, 1, 3, 2, 2);
    Tensor rows = in.ofInts(new int[] {2, 0, 2}, 3);
    Tensor rowWeights = TestTensors.uniform(in, random, F32, 1, 3);
    Tensor xBf16 = TestTensors.uniform(in, random, BF16, 1, 3, 8);
    Tensor q = TestTensors.uniform(in, random, F32, 1, 3, 2, 4);
    Tensor keys = TestTensors.uniform(in, random, F32, 1, 5, 2, 4);
    Tensor values = TestTensors.uniform(in, random, F32, 1, 5, 2, 3);
    Tensor causalLens = in.ofInts(new int[] {3, 4, 5}, 3);
    Tensor headsW = TestTensors.uniform(in, random, BF16, 1, 2, 5, 4); // (heads, m, k)
    Tensor headsWKm = TestTensors.uniform(in, random, BF16, 1, 2, 4, 5); // (heads, k, m)

    Tensor matmulOut = out.allocate(F32, 3, 5);
    Tensor q8 = out.allocate(I8, 3, 8);
    Tensor scales = out.allocate(F32, 3);
    Tensor int8Out = out.allocate(F32, 3, 5);
    Tensor dequantOut = out.allocate(BF16, 5, 8);
    Tensor normOut = out.allocate(F32, 3, 8);
    Tensor roped = TestTensors.uniform(out, random, F32, 1, 3, 8);
    Tensor siluOut = out.allocate(F32, 3, 8);
    Tensor siluQ = out.allocate(I8, 3, 8);
    Tensor siluScales = out.allocate(F32, 3);
    Tensor ids = out.allocate(I32, 3, 2);
    Tensor gateWeights = out.allocate(F32, 3, 2);
    Tensor attnOut = out.allocate(F32, 3, 2, 4);
    Tensor gq = out.allocate(I8, 3, 8);
    Tensor gScales = out.allocate(F32, 3);
    Tensor combined = TestTensors.uniform(out, random, F32, 1, 3, 8);
    Tensor converted = out.allocate(F32, 3, 8);
    Tensor argmaxIds = out.allocate(DType.I32, 3);
    Tensor prefillOut = out.allocate(F32, 3, 2, 3);
    Tensor sum = out.allocate(F32, 3, 8);
    Tensor groupedOut = out.allocate(F32, 3, 5);
    Tensor rowOffsets = in.ofInts(new int[] {0, 1, 1, 3}, 4);
    Tensor headsOut = out.allocate(F32, 3, 2, 5);
    Tensor headsKmOut = out.allocate(F32, 3, 2, 5);
    Tensor headsKmPairsOut = out.allocate(F32, 3, 2, 5);
    Tensor headsKmPairs = in.allocate(BF16, HeadsKmPairs.shape(2, 4, 5));
    HeadsKmPairs.fill(headsKmPairs, TestTensors.uniform(in, random, BF16, 1, 2, 4, 5));

    return List.of(
        new SampleCall("matmul", List.of(matmulOut), k -> k.matmul(matmulOut, x, w)),
        new SampleCall("matmulHeads", List.of(headsOut), k -> k.matmulHeads(headsOut, x.reshape(3, 2, 4), headsW)),
        new SampleCall("matmulHeadsKm", List.of(headsKmOut), k -> k.matmulHeadsKm(headsKmOut, x.reshape(3, 2, 4), headsWKm)),
        new SampleCall("matmulHeadsKmPairs", List.of(headsKmPairsOut),
            k -> k.matmulHeadsKmPairs(headsKmPairsOut, xBf16.reshape(3, 2, 4), headsKmPairs)),
        new SampleCall("quantizeRows", List.of(q8, scales), k -> k.quantizeRows(q8, scales, x)),
        new SampleCall("matmulInt8", List.of(int8Out), k -> k.matmulInt8(int8Out, xq, xScales, wq, wScales)),
        new SampleCall("matmulInt8Grouped", List.of(groupedOut), k -> k.matmulInt8Grouped(groupedOut, xq, xScales,
            rowOffsets, new Tensor[] {wq, null, wq}, new Tensor[] {wScales, null, wScales})),
        new SampleCall("dequantizeFp8", List.of(dequantOut), k -> k.dequantizeFp8(dequantOut, fp8, scaleInv, 4)),
        new SampleCall("rmsNorm", List.of(normOut), k -> k.rmsNorm(normOut, x, normWeight, 1e-6f)),
        new SampleCall("rope", List.of(roped), k -> k.rope(roped, positions, table)),
        new SampleCall("siluMul", List.of(siluOut), k -> k.siluMul(siluOut, x, x)),
        new SampleCall("siluMulQuantize", List.of(siluQ, siluScales), k -> k.siluMulQuantize(siluQ, siluScales, x, x)),
        new SampleCall("moeGate", List.of(ids, gateWeights),
            k -> k.moeGate(ids, gateWeights, logits, bias, new GateParams(2, 4, 2, true, 2.5f))),
        new SampleCall("mlaDecode", List.of(attnOut), k -> k.mlaDecode(attnOut, qLatent, qRope, kv, 0.5f)),
        new SampleCall("attention", List.of(prefillOut), k -> k.attention(prefillOut, q, keys, values, causalLens, 0.5f)),
        new SampleCall("add", List.of(sum), k -> k.add(sum, x, x)),
        new SampleCall("gatherQuantize", List.of(gq, gScales), k -> k.gatherQuantize(gq, gScales, x, rows)),
        new SampleCall("scatterAdd", List.of(combined), k -> k.scatterAdd(combined, x, rows, rowWeights)),
        new SampleCall("convert", List.of(converted), k -> k.convert(converted, xBf16)),
        new SampleCall("argmaxRows", List.of(argmaxIds), k -> k.argmaxRows(argmaxIds, x)));
  }
}
