package io.moemesh.model.reference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moemesh.model.ModelConfig;
import io.moemesh.model.ModelConfigReader;
import java.io.IOException;
import java.io.InputStream;
import java.util.function.Consumer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** Worked examples for the pieces of {@link NaiveDeepseek}, computed by hand from DeepSeek's model.py. */
class NaiveReferenceTest {

  /** The shipped tiny config (8 experts in 2 groups, 1 group kept, top-2, route scale 2.5), edited. */
  static ModelConfig tiny(Consumer<ObjectNode> edit) {
    try (InputStream in = NaiveReferenceTest.class.getResourceAsStream("/io/moemesh/model/configs/tiny.json")) {
      ObjectNode json = (ObjectNode) new ObjectMapper().readTree(in);
      edit.accept(json);
      return ModelConfigReader.parse(json, "tiny.json");
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @Nested
  class Fp8 {
    @Test
    void decodesE4m3fn() {
      assertThat(NaiveDeepseek.e4m3((byte) 0x00)).isEqualTo(0.0);
      assertThat(NaiveDeepseek.e4m3((byte) 0x38)).isEqualTo(1.0);    // 0.0111.000 = 2^(7-7)
      assertThat(NaiveDeepseek.e4m3((byte) 0x3C)).isEqualTo(1.5);    // 0.0111.100
      assertThat(NaiveDeepseek.e4m3((byte) 0x7E)).isEqualTo(448.0);  // largest finite: 1.75 · 2^8
      assertThat(NaiveDeepseek.e4m3((byte) 0xFE)).isEqualTo(-448.0);
      assertThat(NaiveDeepseek.e4m3((byte) 0x08)).isEqualTo(0x1p-6); // smallest normal
      assertThat(NaiveDeepseek.e4m3((byte) 0x01)).isEqualTo(0x1p-9); // smallest subnormal
      assertThat(NaiveDeepseek.e4m3((byte) 0x7F)).isNaN();
      assertThat(NaiveDeepseek.e4m3((byte) 0xFF)).isNaN();
    }
  }

  @Nested
  class Rope {
    @Test
    void yarnBlendsTheLowFrequenciesAsPrecomputeFreqsCis() {
      // tiny: d = 8, θ = 1e4, factor 2, original 128 < 512. correction_dim(32) = 8·ln(128/(64π))/(2 ln 1e4) = -0.20
      // → low 0; correction_dim(1) = 1.31 → high 2. ramp(i) = i/2 clamped: smooth = 1, 0.5, 0, 0.
      float[] freqs = NaiveDeepseek.ropeFrequencies(tiny(json -> {}));
      assertThat(freqs).containsExactly(new float[] {1f, 0.075f, 0.005f, 0.0005f}, within(1e-7f));
    }

    @Test
    void noYarnWithinTheOriginalContext() {
      float[] freqs = NaiveDeepseek.ropeFrequencies(tiny(json -> json.put("max_position_embeddings", 128)));
      assertThat(freqs).containsExactly(new float[] {1f, 0.1f, 0.01f, 0.001f}, within(1e-7f));
    }

    @Test
    void softmaxScaleCarriesMscaleSquaredUnderYarn() {
      double mscale = 0.1 * Math.log(2) + 1;
      assertThat(NaiveDeepseek.softmaxScale(tiny(json -> {}))).isCloseTo(mscale * mscale / Math.sqrt(24), within(1e-15));
      assertThat(NaiveDeepseek.softmaxScale(tiny(json -> json.put("max_position_embeddings", 128))))
          .isCloseTo(1 / Math.sqrt(24), within(1e-15));
    }
  }

  @Nested
  class Gate {
    static double logit(double p) {
      return Math.log(p / (1 - p));
    }

    static double[] logits(double... scores) {
      double[] l = new double[scores.length];
      for (int i = 0; i < l.length; i++) l[i] = logit(scores[i]);
      return l;
    }

    // sigmoid scores: group 0 = experts 0-3, group 1 = experts 4-7
    final double[] scores = logits(0.9, 0.1, 0.1, 0.1, 0.6, 0.6, 0.1, 0.1);

    @Test
    void withABiasAGroupScoresTheSumOfItsTopTwo() {
      // group 0: 0.9 + 0.1 = 1.0; group 1: 0.6 + 0.6 = 1.2 → group 1 alone is kept, though expert 0 is the best
      var route = NaiveDeepseek.route(tiny(json -> {}), scores, new double[8]);
      assertThat(route.experts()).containsExactly(4, 5);
      assertThat(route.weights()).containsExactly(new double[] {1.25, 1.25}, within(1e-12));
    }

    @Test
    void theBiasSelectsButTheWeightsAreTheUnbiasedScores() {
      double[] bias = {0, 0, 0, 0, 0, 0, 0.6, 0};
      // group 1 choices: 0.6, 0.6, 0.7, 0.1 → experts 6 then 4 (tie with 5: lower id); weights ∝ 0.1 and 0.6
      var route = NaiveDeepseek.route(tiny(json -> {}), scores, bias);
      assertThat(route.experts()).containsExactly(6, 4);
      assertThat(route.weights()).containsExactly(new double[] {2.5 / 7, 2.5 * 6 / 7}, within(1e-12));
    }

    @Test
    void withoutABiasAGroupScoresItsMaximum() {
      // group 0: 0.9, group 1: 0.6 → group 0; experts 0, then 1 (ties: lower id); weights 0.9 and 0.1 of 2.5
      var route = NaiveDeepseek.route(tiny(json -> json.put("topk_method", "group_limited_greedy")), scores, null);
      assertThat(route.experts()).containsExactly(0, 1);
      assertThat(route.weights()).containsExactly(new double[] {2.25, 0.25}, within(1e-12));
    }

    @Test
    void withoutNormalizationTheWeightsAreTheScoresTimesTheRouteScale() {
      var route = NaiveDeepseek.route(tiny(json -> json.put("norm_topk_prob", false)), scores, new double[8]);
      assertThat(route.weights()).containsExactly(new double[] {1.5, 1.5}, within(1e-12));
    }
  }
}
