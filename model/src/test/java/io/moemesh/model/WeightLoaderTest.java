package io.moemesh.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.checkpoint.Checkpoint;
import io.moemesh.model.demo.DemoCheckpoint;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Projections of one input stacked into one A8W8 matrix give the bits of the projections apart. */
class WeightLoaderTest {
  @TempDir Path root;

  @Test
  void aStackOfQuantizedProjectionsHoldsAndComputesEachOneBitForBit() throws Exception {
    Path dir = TestCheckpoints.demo(root, "tiny", DemoCheckpoint.Format.BF16, 5);
    ModelConfig config = ModelConfigReader.read(dir.resolve("config.json"));
    String q = "model.layers.1.self_attn.q_a_proj", kv = "model.layers.1.self_attn.kv_a_proj_with_mqa";
    int qRows = config.qLoraRank(), kvRows = config.kvLoraRank() + config.qkRopeHeadDim(), dim = config.hiddenSize();
    try (Kernels kernels = NativeKernels.create(2); var arena = TensorArena.open(); Checkpoint checkpoint = Checkpoint.open(dir)) {
      var loader = new WeightLoader(checkpoint, config, Precision.INT8, kernels, arena, null);
      Linear[] stack = loader.quantizedStack(new String[] {q, kv}, new int[] {qRows, kvRows}, dim);
      Linear qApart = loader.linear(q, qRows, dim, true), kvApart = loader.linear(kv, kvRows, dim, true);
      assertBitEqual(stack[1].weight(), qApart.weight());
      assertBitEqual(stack[1].scales(), qApart.scales());
      assertBitEqual(stack[2].weight(), kvApart.weight());
      assertBitEqual(stack[2].scales(), kvApart.scales());

      Tensor x = arena.allocate(DType.F32, 3, dim);
      var random = new Random(1);
      for (long i = 0; i < x.numElements(); i++) x.setFloat(i, random.nextFloat() * 2 - 1);
      Tensor both = arena.allocate(DType.F32, 3, qRows + kvRows);
      Tensor qOut = arena.allocate(DType.F32, 3, qRows), kvOut = arena.allocate(DType.F32, 3, kvRows);
      stack[0].apply(kernels, both, x, arena);
      qApart.apply(kernels, qOut, x, arena);
      kvApart.apply(kernels, kvOut, x, arena);
      assertThat(both.cols(0, qRows).toFloatArray()).containsExactly(qOut.toFloatArray());
      assertThat(both.cols(qRows, qRows + kvRows).toFloatArray()).containsExactly(kvOut.toFloatArray());
    }
  }

  /** INT8 weights byte for byte, F32 scales value for value. */
  private static void assertBitEqual(Tensor actual, Tensor expected) {
    assertThat(actual.dtype()).isEqualTo(expected.dtype());
    assertThat(actual.shape()).isEqualTo(expected.shape());
    if (actual.dtype() == DType.F32) {
      assertThat(actual.toFloatArray()).containsExactly(expected.toFloatArray());
      return;
    }
    for (long i = 0; i < actual.numElements(); i++) assertThat(actual.getByte(i)).as("byte %d", i).isEqualTo(expected.getByte(i));
  }
}
