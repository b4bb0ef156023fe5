package io.moemesh.model.sampling;

import static io.moemesh.model.sampling.SamplerTest.draw;
import static io.moemesh.model.sampling.SamplerTest.randomLogits;
import static io.moemesh.model.sampling.SamplerTest.seeded;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class SamplerFiltersTest {
  /** Probabilities 0.5, 0.3, 0.15, 0.05 at temperature 1. */
  static final float[] FOUR = {(float) Math.log(0.5), (float) Math.log(0.3), (float) Math.log(0.15),
      (float) Math.log(0.05)};

  static double[] probabilities(SamplingParams p, float[] logits) {
    return new Sampler(p, logits.length).probabilities(logits, new TokenCounts());
  }

  @Nested
  class TopK {
    @Test
    void samplesOnlyTheKLargest() {
      float[] logits = randomLogits(200, 1);
      SamplingParams p = seeded(11).topK(5).build();
      double[] expected = NaiveSampling.distribution(logits, new TokenCounts(), p);
      assertThat(java.util.Arrays.stream(expected).filter(x -> x > 0).count()).isEqualTo(5);
      for (int token : draw(new Sampler(p, 200), logits, 10_000)) {
        assertThat(expected[token]).as("token %d is outside the top 5", token).isPositive();
      }
    }

    @Test
    void keepsTiesAtTheBoundary() {
      assertThat(probabilities(seeded(1).topK(2).build(), new float[] {3f, 1f, 1f, 0f}))
          .satisfies(p -> assertThat(p[1]).isEqualTo(p[2]).isPositive(), p -> assertThat(p[3]).isZero());
    }

    @Test
    void isOffWhenKIsAtLeastTheVocabulary() {
      assertThat(probabilities(seeded(1).topK(4).build(), FOUR))
          .containsExactly(new double[] {0.5, 0.3, 0.15, 0.05}, within(1e-7));
    }
  }

  @Nested
  class TopP {
    @Test
    void neverSamplesOutsideTheNucleus() {
      SamplingParams p = seeded(5).topP(0.75).build(); // 0.5 < 0.75, then 0.8 >= 0.75: keep {0, 1}
      int[] tokens = draw(new Sampler(p, 4), FOUR, 10_000);
      assertThat(tokens).containsOnly(0, 1);
      long zeros = java.util.Arrays.stream(tokens).filter(t -> t == 0).count();
      assertThat(zeros / 10_000.0).isCloseTo(0.5 / 0.8, within(0.02));
    }

    @Test
    void keepsTheTokenThatCrossesTheThreshold() {
      assertThat(probabilities(seeded(1).topP(0.51).build(), FOUR))
          .containsExactly(new double[] {0.5 / 0.8, 0.3 / 0.8, 0, 0}, within(1e-7));
    }

    @Test
    void alwaysKeepsTheTopToken() {
      assertThat(probabilities(seeded(1).topP(1e-9).build(), FOUR)).containsExactly(1, 0, 0, 0);
    }

    @Test
    void breaksEqualProbabilityTiesByLowestId() {
      // four equal tokens: top_p 0.5 keeps the first two by id (mass before token 2 is 0.5 >= 0.5)
      assertThat(probabilities(seeded(1).topP(0.5).build(), new float[4]))
          .containsExactly(new double[] {0.5, 0.5, 0, 0}, within(1e-12));
    }

    @Test
    void appliesToTheTopKSurvivors() {
      // alone, top_p 0.82 keeps {0, 1, 2} (0.8 < 0.82); after top-k 3 the mass before token 2 is
      // 0.8 / 0.95 = 0.84 >= 0.82, so it goes
      assertThat(probabilities(seeded(1).topP(0.82).build(), FOUR)[2]).isPositive();
      assertThat(probabilities(seeded(1).topK(3).topP(0.82).build(), FOUR))
          .containsExactly(new double[] {0.5 / 0.8, 0.3 / 0.8, 0, 0}, within(1e-7));
    }

    @Test
    void handlesAFlatDistributionWhereEveryTokenIsACandidate() {
      float[] logits = randomLogits(5000, 8);
      for (int i = 0; i < logits.length; i++) {
        logits[i] *= 0.001f;
      }
      SamplingParams p = seeded(1).topP(0.3).build();
      assertThat(probabilities(p, logits))
          .containsExactly(NaiveSampling.distribution(logits, new TokenCounts(), p), within(1e-9));
    }
  }

  @Nested
  class MinP {
    @Test
    void dropsTokensBelowTheFractionOfTheTopProbability() {
      // min_p 0.25: threshold 0.125 keeps 0.5, 0.3, 0.15 and drops 0.05
      SamplingParams p = seeded(3).minP(0.25).build();
      assertThat(probabilities(p, FOUR)).containsExactly(new double[] {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0},
          within(1e-7));
      assertThat(draw(new Sampler(p, 4), FOUR, 10_000)).doesNotContain(3);
    }

    @Test
    void minPOfOneKeepsOnlyTheTopTokens() {
      assertThat(probabilities(seeded(1).minP(1).build(), new float[] {2f, 5f, 5f, 1f}))
          .containsExactly(new double[] {0, 0.5, 0.5, 0}, within(1e-12));
    }

    @Test
    void comesAfterTopPAsInVllmV0() {
      // V0 order: top_p 0.82 keeps {0, 1, 2} (0.8 < 0.82), then min_p 0.2 (threshold 0.1) keeps them all.
      // V1 order would drop token 3 first and then token 2 (0.8 / 0.95 >= 0.82).
      assertThat(probabilities(seeded(1).topP(0.82).minP(0.2).build(), FOUR))
          .containsExactly(new double[] {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0}, within(1e-7));
    }
  }

  @Nested
  class NucleusSelect {
    /** Sort by (weight desc, id asc); keep while the mass before the token is below topP · total. */
    double[] bySorting(float[] w, double topP) {
      double total = 0;
      for (float v : w) {
        total += v;
      }
      Integer[] order = java.util.stream.IntStream.range(0, w.length).boxed()
          .sorted((a, b) -> w[a] != w[b] ? Float.compare(w[b], w[a]) : Integer.compare(a, b))
          .toArray(Integer[]::new);
      double[] kept = new double[w.length];
      double before = 0;
      for (int t : order) {
        kept[t] = before < topP * total ? w[t] : 0;
        before += w[t];
      }
      return kept;
    }

    @Test
    void matchesSortingOnTiesFlatAndPeakedWeights() {
      SplittableRandom random = new SplittableRandom(23);
      for (int trial = 0; trial < 300; trial++) {
        int vocab = 1 + random.nextInt(3000);
        int levels = 1 + random.nextInt(trial % 3 == 0 ? 4 : 60); // few levels: many exact ties
        float[] w = new float[vocab];
        for (int i = 0; i < vocab; i++) {
          double step = trial % 2 == 0 ? 0.01 : 0.7;
          w[i] = random.nextInt(5) == 0 ? 0f : (float) Math.exp(-random.nextInt(levels) * step);
        }
        w[random.nextInt(vocab)] = 1f; // the top weight is exactly 1, as toWeights leaves it
        // not closer to 1 than 1e-6: nearer, the boundary sits within the reference's own summation error
        double topP = random.nextBoolean() ? random.nextDouble() : 1 - Math.pow(10, -1 - random.nextInt(6));
        double[] expected = bySorting(w, topP);
        float[] actual = w.clone();
        double total = 0;
        for (float v : w) {
          total += v;
        }
        double keptTotal = LogitOps.keepNucleus(actual, total, topP);
        double expectedTotal = 0;
        for (int i = 0; i < vocab; i++) {
          assertThat((double) actual[i]).as("trial %d token %d", trial, i).isEqualTo(expected[i]);
          expectedTotal += expected[i];
        }
        assertThat(keptTotal).isEqualTo(expectedTotal);
      }
    }

    @Test
    void keepsOnlyTheLowestIdTopTokenWhenItAloneReachesTopP() {
      assertThat(probabilities(seeded(1).topP(0.3).build(), new float[] {1f, 5f, 5f, 1f}))
          .containsExactly(0, 1, 0, 0);
    }
  }

  @Nested
  class AgainstTheNaiveReference {
    @Test
    void agreesForRandomRowsAndParameters() {
      SplittableRandom random = new SplittableRandom(17);
      for (int trial = 0; trial < 120; trial++) {
        int vocab = 1 + random.nextInt(1021);
        float[] logits = randomLogits(vocab, trial);
        for (int i = 0; i < vocab / 10; i++) {
          logits[random.nextInt(vocab)] = Float.NEGATIVE_INFINITY;
        }
        logits[random.nextInt(vocab)] = 1f; // at least one finite logit
        TokenCounts history = new TokenCounts();
        for (int i = 0; i < 30; i++) {
          if (random.nextBoolean()) {
            history.addPrompt(random.nextInt(vocab));
          } else {
            history.addGenerated(random.nextInt(vocab));
          }
        }
        SamplingParams p = SamplingParams.builder().seed((long) trial)
            .temperature(random.nextInt(8) == 0 ? 0 : 0.05 + 1.95 * random.nextDouble())
            .topK(random.nextBoolean() ? 0 : 1 + random.nextInt(vocab + 5))
            .topP(random.nextBoolean() ? 1 : 0.05 + 0.95 * random.nextDouble())
            .minP(random.nextBoolean() ? 0 : random.nextDouble() * 0.5)
            .presencePenalty(4 * random.nextDouble() - 2).frequencyPenalty(4 * random.nextDouble() - 2)
            .repetitionPenalty(0.5 + random.nextDouble()).build();
        double[] expected = NaiveSampling.distribution(logits, history, p);
        assertThat(new Sampler(p, vocab).probabilities(logits, history))
            .as("trial %d: %s", trial, p)
            .containsExactly(expected, within(1e-6));
      }
    }
  }
}
