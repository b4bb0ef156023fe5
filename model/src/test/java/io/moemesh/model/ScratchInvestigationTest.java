package io.moemesh.model;

import io.moemesh.kernels.NativeKernels;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class ScratchInvestigationTest {
  @Test
  void investigate() {
    Path ck = Path.of(System.getProperty("ck", "/tmp/scratch/ck-tiny-BF16"));
    int vocab = Integer.getInteger("vocab", 1024);
    NaiveProbe naive = NaiveProbe.load(ck);
    try (NativeKernels k = NativeKernels.create(2)) {
      DeepseekModel exact = DeepseekModel.load(ck, Precision.EXACT, k, null);
      DeepseekModel int8 = DeepseekModel.load(ck, Precision.INT8, k, null);
      for (int s = 0; s < 4; s++) {
        int[] tokens = DeepseekModelTest.randomTokens(vocab, 100, 100 + s);
        var ref = naive.forward(tokens);
        float[][] a = DeepseekModelTest.prefill(exact, tokens), b = DeepseekModelTest.prefill(int8, tokens);
        double[] margins = Arrays.copyOf(naive.minMargin, tokens.length);
        for (int t = 0; t < tokens.length; t++) {
          double dEx = DeepseekModelTest.diff(new float[][] {a[t]}, new double[][] {ref.logits()[t]}).maxAbs();
          double d8 = DeepseekModelTest.diff(new float[][] {b[t]}, new double[][] {ref.logits()[t]}).maxAbs();
          boolean flip = DeepseekModelTest.argmax(a[t]) != DeepseekModelTest.argmax(b[t]);
          System.out.printf("s%d t%3d exact-naive %.1e  int8-naive %7.4f  minRoutingMargin %.2e %s%n", s, t, dEx, d8, margins[t], flip ? "TOP1-FLIP" : "");
        }
      }
    }
  }
}
