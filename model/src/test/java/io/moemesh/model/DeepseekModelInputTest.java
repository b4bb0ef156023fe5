package io.moemesh.model;

import static io.moemesh.model.DeepseekModelTest.PAGE;
import static io.moemesh.model.DeepseekModelTest.TINY_VOCAB;
import static io.moemesh.model.ModelRuns.randomTokens;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.kernels.DType;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.demo.DemoCheckpoint.Format;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** What {@link DeepseekModel} refuses, with a message saying why, before it writes anything. */
class DeepseekModelInputTest {
  @TempDir static Path dir;
  static NativeKernels kernels;
  static Path tinyBf16;
  static final Map<Precision, DeepseekModel> models = new EnumMap<>(Precision.class);

  @BeforeAll
  static void writeCheckpoint() {
    kernels = NativeKernels.create(2);
    tinyBf16 = TestCheckpoints.demo(dir, "tiny", Format.BF16, DeepseekModelTest.SEED);
  }

  @AfterAll
  static void close() {
    models.values().forEach(DeepseekModel::close);
    kernels.close();
  }

  static DeepseekModel model(Path checkpoint, Precision precision) {
    return models.computeIfAbsent(precision, p -> DeepseekModel.load(checkpoint, p, kernels, null));
  }

  @Nested
  class BadInput {
    @ParameterizedTest
    @EnumSource(Precision.class)
    void aTokenOutsideTheVocabularyIsAnError(Precision precision) {
      DeepseekModel model = model(tinyBf16, precision);
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, 2, PAGE);
        assertThatThrownBy(() -> model.forward(ForwardBatch.single(new int[] {3, TINY_VOCAB}, 0, 2, new int[] {0}, true), cache, arena))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("token id " + TINY_VOCAB).hasMessageContaining("vocabulary [0, " + TINY_VOCAB + ")");
        assertThatThrownBy(() -> model.forward(ForwardBatch.single(new int[] {-1}, 0, 1, new int[] {0}, true), cache, arena))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("token id -1");
      }
    }
  }

  @Nested
  class BadBatches {
    @Test
    void aBlockTableTooShortForThePositionsIsAnErrorBeforeAnyWrite() {
      DeepseekModel model = model(tinyBf16, Precision.BF16);
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, 4, PAGE);
        int[] tokens = randomTokens(TINY_VOCAB, PAGE + 1, 1);
        assertThatThrownBy(() -> model.forward(ForwardBatch.single(tokens, 0, tokens.length, new int[] {0}, false), cache, arena))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("block table has 1 page(s)");
      }
    }

    @Test
    void aPageOutsideTheCacheIsAnError() {
      DeepseekModel model = model(tinyBf16, Precision.BF16);
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, 4, PAGE);
        assertThatThrownBy(() -> model.forward(ForwardBatch.single(new int[] {5}, 0, 1, new int[] {4}, false), cache, arena))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("page id 4").hasMessageContaining("4 pages");
      }
    }

    @Test
    void anMtpDepthThatDoesNotExistIsAnError() {
      DeepseekModel model = model(tinyBf16, Precision.BF16);
      try (TensorArena arena = TensorArena.open()) {
        LatentKvCache cache = model.newCache(arena, 4, PAGE);
        var batch = ForwardBatch.single(new int[] {5}, 0, 1, new int[] {0}, false);
        assertThatThrownBy(() -> model.forwardMtp(1, batch, arena.allocate(DType.F32, 1, 128), cache, arena))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("MTP depth 1");
      }
    }
  }

}
