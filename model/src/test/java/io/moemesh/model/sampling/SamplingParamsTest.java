package io.moemesh.model.sampling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashSet;
import java.util.Set;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class SamplingParamsTest {

  @Nested
  class Defaults {
    @Test
    void builderHoldsVllmDefaults() {
      SamplingParams p = SamplingParams.builder().build();
      assertThat(p.temperature()).isEqualTo(1.0);
      assertThat(p.topP()).isEqualTo(1.0);
      assertThat(p.topK()).isZero();
      assertThat(p.minP()).isZero();
      assertThat(p.presencePenalty()).isZero();
      assertThat(p.frequencyPenalty()).isZero();
      assertThat(p.repetitionPenalty()).isEqualTo(1.0);
      assertThat(p.seed()).isNull();
      assertThat(p.stopTokenIds()).isEmpty();
      assertThat(p.logprobs()).isNull();
      assertThat(p.ignoreEos()).isFalse();
      assertThat(p.isGreedy()).isFalse();
      assertThat(p.usesPenalties()).isFalse();
    }

    @Test
    void greedyHasZeroTemperature() {
      assertThat(SamplingParams.greedy().isGreedy()).isTrue();
      assertThat(SamplingParams.greedy().temperature()).isZero();
    }

    @Test
    void toBuilderRoundTripsAndDerivesVariants() {
      SamplingParams p = SamplingParams.builder().temperature(0.7).topP(0.9).topK(40).minP(0.05)
          .presencePenalty(0.5).frequencyPenalty(-0.5).repetitionPenalty(1.1).seed(7L)
          .stopTokenIds(Set.of(1, 2)).logprobs(5).ignoreEos(true).logitBias(java.util.Map.of(3, -1.5f)).build();
      assertThat(p.toBuilder().build()).isEqualTo(p);
      assertThat(p.toBuilder().seed(8L).build()).isNotEqualTo(p).extracting(SamplingParams::seed).isEqualTo(8L);
      assertThat(p.usesPenalties()).isTrue();
    }

    @Test
    void topKMinusOneIsStoredAsZero() {
      assertThat(SamplingParams.builder().topK(-1).build())
          .isEqualTo(SamplingParams.builder().topK(0).build());
    }

    @Test
    void stopTokenIdsAreCopiedAndImmutable() {
      Set<Integer> ids = new HashSet<>(Set.of(3));
      SamplingParams p = SamplingParams.builder().stopTokenIds(ids).build();
      ids.add(4);
      assertThat(p.stopTokenIds()).containsExactly(3);
      assertThatThrownBy(() -> p.stopTokenIds().add(5)).isInstanceOf(UnsupportedOperationException.class);
    }
  }

  @Nested
  class Validation {
    static Stream<Arguments> invalid() {
      return Stream.of(
          bad("temperature", "[0, 2]", b -> b.temperature(-0.1)),
          bad("temperature", "[0, 2]", b -> b.temperature(2.01)),
          bad("temperature", "[0, 2]", b -> b.temperature(Double.NaN)),
          bad("top_p", "(0, 1]", b -> b.topP(0)),
          bad("top_p", "(0, 1]", b -> b.topP(1.5)),
          bad("top_p", "(0, 1]", b -> b.topP(Double.NaN)),
          bad("top_k", "at least 1", b -> b.topK(-2)),
          bad("min_p", "[0, 1]", b -> b.minP(-0.01)),
          bad("min_p", "[0, 1]", b -> b.minP(1.01)),
          bad("presence_penalty", "[-2, 2]", b -> b.presencePenalty(2.5)),
          bad("presence_penalty", "[-2, 2]", b -> b.presencePenalty(-2.5)),
          bad("frequency_penalty", "[-2, 2]", b -> b.frequencyPenalty(Double.NaN)),
          bad("frequency_penalty", "[-2, 2]", b -> b.frequencyPenalty(-3)),
          bad("repetition_penalty", "greater than 0", b -> b.repetitionPenalty(0)),
          bad("repetition_penalty", "greater than 0", b -> b.repetitionPenalty(-1)),
          bad("repetition_penalty", "finite", b -> b.repetitionPenalty(Double.POSITIVE_INFINITY)),
          bad("logprobs", "[0, 20]", b -> b.logprobs(-1)),
          bad("logprobs", "[0, 20]", b -> b.logprobs(21)),
          bad("stop_token_ids", "non-negative", b -> b.stopTokenIds(Set.of(-3))),
          bad("stop_token_ids", "null", b -> b.stopTokenIds(null)),
          bad("logit_bias", "[-100, 100]", b -> b.logitBias(java.util.Map.of(5, 100.5f))),
          bad("logit_bias", "[-100, 100]", b -> b.logitBias(java.util.Map.of(5, Float.NaN))),
          bad("logit_bias", "non-negative", b -> b.logitBias(java.util.Map.of(-1, 1f))),
          bad("logit_bias", "at most 1024", b -> b.logitBias(java.util.stream.IntStream.range(0, 1025).boxed()
              .collect(java.util.stream.Collectors.toMap(i -> i, i -> 1f)))));
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("invalid")
    void rejectsOutOfRangeNamingTheParameterAndRange(
        String name, String range, UnaryOperator<SamplingParams.Builder> set) {
      assertThatThrownBy(() -> set.apply(SamplingParams.builder()).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith(name)
          .hasMessageContaining(range);
    }

    @Test
    void acceptsTheBoundaries() {
      assertThatCode(() -> SamplingParams.builder().temperature(2).topP(1).topK(1).minP(1)
          .presencePenalty(-2).frequencyPenalty(2).repetitionPenalty(1e-3).logprobs(20).build())
          .doesNotThrowAnyException();
      assertThatCode(() -> SamplingParams.builder().temperature(0).topP(1e-9).minP(0)
          .presencePenalty(2).frequencyPenalty(-2).logprobs(0).seed(-5L).build())
          .doesNotThrowAnyException();
    }

    private static Arguments bad(String name, String range, UnaryOperator<SamplingParams.Builder> set) {
      return Arguments.of(name, range, set);
    }
  }

  @Nested
  class ValidateFor {
    @Test
    void acceptsStopIdsInsideTheVocabulary() {
      SamplingParams p = SamplingParams.builder().stopTokenIds(Set.of(0, 99)).build();
      assertThat(p.validateFor(100)).isSameAs(p);
    }

    @Test
    void rejectsAStopIdAtOrBeyondTheVocabularySize() {
      SamplingParams p = SamplingParams.builder().stopTokenIds(Set.of(100)).build();
      assertThatThrownBy(() -> p.validateFor(100))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("stop_token_ids contains 100, outside the vocabulary [0, 100)");
    }

    @Test
    void rejectsALogitBiasIdAtOrBeyondTheVocabularySize() {
      SamplingParams p = SamplingParams.builder().logitBias(java.util.Map.of(7, 1f, 100, -5f)).build();
      assertThatThrownBy(() -> p.validateFor(100)).hasMessage("logit_bias names token 100, outside the vocabulary [0, 100)");
      assertThat(p.validateFor(101)).isSameAs(p);
    }

    @Test
    void rejectsAnEmptyVocabulary() {
      assertThatThrownBy(() -> SamplingParams.greedy().validateFor(0))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("vocabSize");
    }

    @Test
    void samplerConstructionValidatesStopIds() {
      SamplingParams p = SamplingParams.builder().stopTokenIds(Set.of(10)).build();
      assertThatThrownBy(() -> new Sampler(p, 10))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("stop_token_ids");
    }
  }
}
