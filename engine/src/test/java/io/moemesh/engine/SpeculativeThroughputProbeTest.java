package io.moemesh.engine;

import static io.moemesh.engine.SpeculativeDecodingTest.GREEDY;
import static io.moemesh.engine.SpeculativeDecodingTest.fullSequences;
import static io.moemesh.engine.SpeculativeDecodingTest.oracle;
import static io.moemesh.engine.SpeculativeDecodingTest.run;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.engine.SpeculativeDecodingTest.SpecRun;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.Precision;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Speculative decoding's speed, measured on demand against a real checkpoint (skipped in the build). */
class SpeculativeThroughputProbeTest {
  /**
   * On demand ({@code -Dmoemesh.spec-probe=MODEL_DIR}, e.g. the bench demo model): decode tokens/s and the median
   * decode step without speculation, with the model's own MTP drafts, and with drafts an oracle always gets right
   * (the ceiling a trained MTP head approaches), at batch 1 and 8. Asserts nothing but the tokens.
   */
  @Test
  void throughputProbe() throws Exception {
    String dir = System.getProperty("moemesh.spec-probe");
    org.junit.jupiter.api.Assumptions.assumeTrue(dir != null, "on demand: -Dmoemesh.spec-probe=MODEL_DIR");
    try (DeepseekModel model = DeepseekModel.load(Path.of(dir), Precision.INT8, TinyModel.kernels(), (d, t) -> {})) {
      int vocab = model.config().vocabSize();
      for (int batch : new int[] {1, 8}) {
        List<GenerationRequest> requests = new ArrayList<>();
        for (int i = 0; i < batch; i++) {
          int[] prompt = new java.util.SplittableRandom(i).ints(32, 300, Math.min(4000, vocab)).toArray();
          requests.add(GenerationRequest.of("p" + i, prompt, GREEDY, 40));
        }
        var kv = new KvCacheConfig(batch * 8 + 8, 16, false);
        var slow = java.time.Duration.ofMinutes(30); // a big model on a busy machine
        run(model, EngineTest.ROOMY, kv, requests, 0, null, false, slow); // warm-up
        SpecRun off = run(model, EngineTest.ROOMY, kv, requests, 0, null, false, slow);
        Map<String, int[]> truth = fullSequences(requests, off.run());
        System.out.printf("probe %s batch %d: k=0 %.1f tok/s, step %.1f ms%n", Path.of(dir).getFileName(), batch, off.decodeTokensPerSecond(),
            off.msPerDecodeStep());
        for (int k = 1; k <= 3; k++) {
          SpecRun own = run(model, EngineTest.ROOMY, kv, requests, k, null, false, slow);
          SpecRun oracle = run(model, EngineTest.ROOMY, kv, requests, k, oracle(truth, k, k), false, slow);
          for (GenerationRequest r : requests) assertThat(oracle.run().tokens(r.id())).isEqualTo(off.run().tokens(r.id()));
          System.out.printf("probe batch %d k=%d: own drafts %.1f tok/s, step %.1f ms, %s; oracle %.1f tok/s, step %.1f ms, %.2f tokens/step%n",
              batch, k, own.decodeTokensPerSecond(), own.msPerDecodeStep(), own.run().stats().speculation(), oracle.decodeTokensPerSecond(),
              oracle.msPerDecodeStep(), oracle.run().stats().speculation().meanAcceptanceLength());
        }
      }
    }
  }
}
