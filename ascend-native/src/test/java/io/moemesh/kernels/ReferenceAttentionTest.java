package io.moemesh.kernels;

import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.assertj.core.api.Assertions.withinPercentage;

import java.util.Random;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The reference's attention worked by hand and against plain softmax in double: mlaDecode (AMLA over the paged
 * latent cache, with its power-of-two rescaling) and causal attention.
 */
class ReferenceAttentionTest extends ReferenceFixture {
  @Nested
  class MlaDecode {
    @Test
    void oneVisiblePositionReturnsItsLatent() {
      // pages (1, 2, 3 + 1): rank 3, rope 1; only position 0 is visible.
      Tensor pages = floats(new float[] {0.5f, -2, 7, 1, 9, 9, 9, 9}, 1, 2, 4);
      Tensor out = arena.allocate(F32, 1, 1, 3);
      kernels.mlaDecode(out, floats(new float[] {1, 2, 3}, 1, 1, 3), floats(new float[] {4}, 1, 1, 1),
          new PagedLatentKv(pages, arena.ofInts(new int[] {0}, 1, 1), arena.ofInts(new int[] {1}, 1)), 0.3f);
      float[] v = out.toFloatArray();
      assertThat(v[0]).isCloseTo(0.5f, withinPercentage(1e-4));
      assertThat(v[1]).isCloseTo(-2f, withinPercentage(1e-4));
      assertThat(v[2]).isCloseTo(7f, withinPercentage(1e-4));
    }

    @Test
    void equalScoresAverageTheVisibleLatents() {
      // A zero query scores every position 0: the output is the plain mean of the first 3 latents.
      Tensor pages = floats(new float[] {1, 0, 4, 0, 7, 0, 100, 0}, 2, 2, 2); // rank 1, rope 1
      Tensor out = arena.allocate(F32, 1, 1, 1);
      kernels.mlaDecode(out, arena.allocate(F32, 1, 1, 1), arena.allocate(F32, 1, 1, 1),
          new PagedLatentKv(pages, arena.ofInts(new int[] {0, 1}, 1, 2), arena.ofInts(new int[] {3}, 1)), 1f);
      assertThat(out.getFloat(0)).isEqualTo(4f);
    }

    @Test
    void followsTheBlockTableToItsPages() {
      // The same sequence stored on pages [0, 1] and on pages [2, 0] (swapped copies) attends alike.
      var random = new Random(1);
      Tensor pages = TestTensors.uniform(arena, random, F32, 1, 3, 4, 6);
      Tensor pagesSwapped = arena.allocate(F32, 3, 4, 6);
      pagesSwapped.rows(2, 3).copyFrom(pages.rows(0, 1));
      pagesSwapped.rows(0, 1).copyFrom(pages.rows(1, 2));
      Tensor qLatent = TestTensors.uniform(arena, random, F32, 1, 1, 2, 4);
      Tensor qRope = TestTensors.uniform(arena, random, F32, 1, 1, 2, 2);
      Tensor lens = arena.ofInts(new int[] {7}, 1);
      Tensor direct = arena.allocate(F32, 1, 2, 4);
      Tensor swapped = arena.allocate(F32, 1, 2, 4);
      kernels.mlaDecode(direct, qLatent, qRope, new PagedLatentKv(pages, arena.ofInts(new int[] {0, 1}, 1, 2), lens), 0.5f);
      var swappedKv = new PagedLatentKv(pagesSwapped, arena.ofInts(new int[] {2, 0}, 1, 2), lens);
      kernels.mlaDecode(swapped, qLatent, qRope, swappedKv, 0.5f);
      assertThat(swapped.toFloatArray()).containsExactly(direct.toFloatArray());
    }

    @Test
    void equalsPlainSoftmaxAttentionInDouble() {
      // 4 query rows × 3 heads over pages of 5: lengths 1, 5 (one full page), 12 (partly filled last page), 20 (all).
      var random = new Random(2);
      int rank = 24;
      int rope = 8;
      Attention a = Attention.random(arena, random, new int[] {1, 5, 12, 20}, 3, rank, rope, 5, 4, F32);
      for (float scale : new float[] {0.2f, 1f, 3f}) a.assertMatchesPlainSoftmax(kernels, scale, 1e-5);
      Attention bf = Attention.random(arena, random, new int[] {3, 17, 20}, 2, rank, rope, 5, 4, BF16);
      bf.assertMatchesPlainSoftmax(kernels, 1f, 1e-5);
    }

    @Test
    void rescalesManyTimesAndFlushesVanishedTermsWithoutLosingAccuracy() {
      // Scores climb from about −50 to +50 along the sequence (k_pe[0] = (p − 100) / 2 against qRope[0] = 1,
      // plus a little noise from the latent part), so the integer max of the base-2 scores grows at most steps,
      // and the first terms fall more than 2¹²⁶ below the last (flushed to zero). Every input is a multiple of
      // 1/32, so the scores are exact in F32 and in double alike.
      var random = new Random(3);
      int rank = 32;
      int rope = 4;
      int length = 200;
      int pageSize = 16;
      int numPages = (length + pageSize - 1) / pageSize;
      Tensor pages = arena.allocate(F32, numPages, pageSize, rank + rope);
      for (int p = 0; p < length; p++) {
        long base = (long) p * (rank + rope);
        for (int i = 0; i < rank + rope; i++) pages.setFloat(base + i, (random.nextInt(9) - 4) / 4f);
        pages.setFloat(base + rank, (p - 100) / 2f);
      }
      Tensor qLatent = arena.allocate(F32, 1, 1, rank);
      for (int i = 0; i < rank; i++) qLatent.setFloat(i, (random.nextInt(9) - 4) / 32f);
      Tensor qRope = floats(new float[] {1, 0, 0, 0}, 1, 1, rope);
      int[] blocks = new int[numPages];
      for (int b = 0; b < numPages; b++) blocks[b] = b;
      var a = new Attention(qLatent, qRope, pages, arena.ofInts(blocks, 1, numPages), arena.ofInts(new int[] {length}, 1));

      double[] s2 = a.scores(0, 0, 1f);
      for (int j = 0; j < s2.length; j++) s2[j] /= Math.log(2);
      int maxGrowths = 0;
      double max = s2[0];
      for (double s : s2) if (Math.ceil(s) > Math.ceil(max)) {
        maxGrowths++;
        max = s;
      }
      assertThat(maxGrowths).as("times the running max grew").isGreaterThan(100);
      assertThat(max - s2[0]).as("span of base-2 scores").isGreaterThan(126);
      a.assertMatchesPlainSoftmax(kernels, 1f, 1e-5);
    }

    @Test
    void aBf16QueryWeighsTheValuesInBf16() {
      // rank 1, rope 1: position 0 = (c 0, k_pe 0), position 1 = (c 1, k_pe 1); q_rope 1 scores them 0 and 0.3.
      Tensor pages = bf16(new float[] {0, 0, 1, 1}, 1, 2, 2);
      var kv = new PagedLatentKv(pages, arena.ofInts(new int[] {0}, 1, 1), arena.ofInts(new int[] {2}, 1));
      float s2 = 0.3f * ReferenceAttention.LOG2_E; // position 1's base-2 score; it raises the max from 0 to 1
      float w1 = ReferenceAttention.exp2(s2 - 1);
      float l = 0.5f + w1; // position 0's weight 2^0, halved when the max moved up
      Tensor f32 = arena.allocate(F32, 1, 1, 1);
      Tensor inBf16 = arena.allocate(F32, 1, 1, 1);
      kernels.mlaDecode(f32, floats(new float[] {0}, 1, 1, 1), floats(new float[] {1}, 1, 1, 1), kv, 0.3f);
      kernels.mlaDecode(inBf16, bf16(new float[] {0}, 1, 1, 1), bf16(new float[] {1}, 1, 1, 1), kv, 0.3f);
      assertThat(f32.getFloat(0)).isEqualTo(w1 / l);
      assertThat(inBf16.getFloat(0)).isEqualTo(BFloat16.toFloat(BFloat16.fromFloat(w1)) / l).isNotEqualTo(w1 / l);
    }

    @Test
    void rejectsAPageIdOutOfRangeNamingTheRow() {
      Tensor out = TestTensors.garbage(arena, F32, 2, 1, 2);
      Tensor before = TestTensors.copy(arena, out);
      Tensor pages = arena.allocate(F32, 2, 2, 3);
      var kv = new PagedLatentKv(pages, arena.ofInts(new int[] {0, 1, 1, 2}, 2, 2), arena.ofInts(new int[] {3, 3}, 2));
      assertThatThrownBy(() -> kernels.mlaDecode(out, arena.allocate(F32, 2, 1, 2), arena.allocate(F32, 2, 1, 1), kv, 1f))
          .isInstanceOf(KernelException.class).hasMessageStartingWith("mlaDecode: row 1: page id 2 at block 1");
      TestTensors.assertBitEqual(out, before, "out after a rejected call");
    }

    @Test
    void rejectsAContextLengthBeyondTheBlockTable() {
      Tensor pages = arena.allocate(F32, 2, 2, 3);
      var kv = new PagedLatentKv(pages, arena.ofInts(new int[] {0, 1}, 1, 2), arena.ofInts(new int[] {5}, 1));
      assertThatThrownBy(() -> kernels.mlaDecode(arena.allocate(F32, 1, 1, 2), arena.allocate(F32, 1, 1, 2),
          arena.allocate(F32, 1, 1, 1), kv, 1f))
          .isInstanceOf(KernelException.class).hasMessageStartingWith("mlaDecode: row 0: context length 5");
    }
  }

  @Nested
  class CausalAttention {
    @Test
    void oneVisibleKeyReturnsItsValue() {
      Tensor out = arena.allocate(F32, 1, 1, 3);
      kernels.attention(out, floats(new float[] {0.3f, -2}, 1, 1, 2), floats(new float[] {5, 1}, 1, 1, 2),
          floats(new float[] {0.25f, -7, 1e-3f}, 1, 1, 3), arena.ofInts(new int[] {1}, 1), 0.7f);
      assertThat(out.toFloatArray()).containsExactly(0.25f, -7, 1e-3f);
    }

    @Test
    void equalScoresAverageTheVisibleValues() {
      // A zero query scores every key 0: row 0 sees keys 0..1, row 1 keys 0..3.
      Tensor out = arena.allocate(F32, 2, 1, 1);
      kernels.attention(out, arena.allocate(F32, 2, 1, 2), floats(new float[] {1, 2, 3, 4, 5, 6, 7, 8}, 4, 1, 2),
          floats(new float[] {1, 2, 3, 10}, 4, 1, 1), arena.ofInts(new int[] {2, 4}, 2), 1f);
      assertThat(out.toFloatArray()).containsExactly(1.5f, 4f);
    }

    @Test
    void equalsSoftmaxAttentionInDouble() {
      var random = new Random(4);
      int nq = 4, nk = 6, heads = 2, dqk = 16, dv = 8;
      Tensor q = TestTensors.uniform(arena, random, F32, 1, nq, heads, dqk);
      Tensor k = TestTensors.uniform(arena, random, F32, 1, nk, heads, dqk);
      Tensor v = TestTensors.uniform(arena, random, F32, 1, nk, heads, dv);
      Tensor out = arena.allocate(F32, nq, heads, dv);
      float scale = 0.9f;
      kernels.attention(out, q, k, v, arena.ofInts(new int[] {3, 4, 5, 6}, nq), scale);
      for (int t = 0; t < nq; t++) {
        for (int h = 0; h < heads; h++) {
          double[] s = new double[3 + t];
          double max = Double.NEGATIVE_INFINITY;
          for (int j = 0; j < s.length; j++) {
            for (int i = 0; i < dqk; i++)
              s[j] += (double) q.getFloat((t * heads + h) * dqk + i) * k.getFloat((j * heads + h) * dqk + i);
            s[j] *= scale;
            max = Math.max(max, s[j]);
          }
          double sum = 0;
          for (int j = 0; j < s.length; j++) sum += Math.exp(s[j] - max);
          for (int i = 0; i < dv; i++) {
            double expected = 0;
            for (int j = 0; j < s.length; j++) expected += Math.exp(s[j] - max) / sum * v.getFloat((j * heads + h) * dv + i);
            assertThat((double) out.getFloat((t * heads + h) * dv + i)).isCloseTo(expected, within(1e-5));
          }
        }
      }
    }

    @Test
    void naiveAttentionOnTheLatentsEqualsAbsorbedDecode() {
      // MLA two ways: mlaDecode over the latent cache, and plain attention whose keys are c_kv ‖ k_pe (shared
      // by every head), whose values are c_kv and whose queries are qLatent ‖ qRope.
      var random = new Random(5);
      int heads = 3, rank = 16, rope = 4, len = 11;
      Attention a = Attention.random(arena, random, new int[] {len}, heads, rank, rope, 4, 3, F32);
      Tensor decoded = arena.allocate(F32, 1, heads, rank);
      kernels.mlaDecode(decoded, a.qLatent(), a.qRope(), a.kv(), 0.4f);

      Tensor q = arena.allocate(F32, 1, heads, rank + rope);
      q.cols(0, rank).copyFrom(a.qLatent());
      q.cols(rank, rank + rope).copyFrom(a.qRope());
      Tensor keys = arena.allocate(F32, len, heads, rank + rope);
      Tensor values = arena.allocate(F32, len, heads, rank);
      for (int j = 0; j < len; j++) {
        int page = a.blockTable().getInt(j / 4);
        Tensor token = a.pages().rows(page, page + 1).reshape(4, rank + rope).rows(j % 4, j % 4 + 1);
        for (int h = 0; h < heads; h++) {
          keys.rows(j, j + 1).reshape(heads, rank + rope).rows(h, h + 1).copyFrom(token);
          values.rows(j, j + 1).reshape(heads, rank).rows(h, h + 1).copyFrom(token.cols(0, rank));
        }
      }
      Tensor naive = arena.allocate(F32, 1, heads, rank);
      kernels.attention(naive, q, keys, values, arena.ofInts(new int[] {len}, 1), 0.4f);
      float[] d = decoded.toFloatArray();
      float[] n = naive.toFloatArray();
      for (int i = 0; i < d.length; i++) assertThat(d[i]).isCloseTo(n[i], within((float) (1e-5 * a.largestLatent(0))));
    }

    @Test
    void rejectsAContextLengthOutOfRangeNamingTheRow() {
      Tensor out = TestTensors.garbage(arena, F32, 2, 1, 2);
      assertThatThrownBy(() -> kernels.attention(out, arena.allocate(F32, 2, 1, 2), arena.allocate(F32, 3, 1, 2),
          arena.allocate(F32, 3, 1, 2), arena.ofInts(new int[] {1, 4}, 2), 1f))
          .isInstanceOf(KernelException.class).hasMessageStartingWith("attention: row 1: context length 4");
      assertThat(out.toFloatArray()).containsOnly(Float.NaN);
    }
  }

  @Nested
  class Exp2 {
    @Test
    void isWithin1_02UlpOfExactOverTheWeightsRange() {
      var random = new Random(3);
      for (int i = 0; i < 200_000; i++) {
        float x = i < 1000 ? -i / 8f : -126f * random.nextFloat();
        double exact = Math.pow(2, x);
        assertThat(Math.abs(ReferenceAttention.exp2(x) - exact)).as("2^%s", x).isLessThanOrEqualTo(1.02 * Math.ulp((float) exact));
      }
    }

    @Test
    void isExactAtIntegersAndZeroBelowTheNormalRange() {
      assertThat(ReferenceAttention.exp2(0f)).isEqualTo(1f);
      assertThat(ReferenceAttention.exp2(-3f)).isEqualTo(0.125f);
      assertThat(ReferenceAttention.exp2(-126f)).isEqualTo(Float.MIN_NORMAL);
      assertThat(ReferenceAttention.exp2(-126.001f)).isEqualTo(0f);
      assertThat(ReferenceAttention.exp2(Float.NEGATIVE_INFINITY)).isEqualTo(0f);
    }
  }

  @Nested
  class TimesPowerOfTwo {
    @Test
    void subtractsFromTheExponent() {
      assertThat(ReferenceAttention.timesPowerOfTwo(1f, 3)).isEqualTo(0.125f);
      assertThat(ReferenceAttention.timesPowerOfTwo(-6f, 2)).isEqualTo(-1.5f);
      assertThat(ReferenceAttention.timesPowerOfTwo(0x1p-125f, 1)).isEqualTo(0x1p-126f);
      assertThat(ReferenceAttention.timesPowerOfTwo(Float.MAX_VALUE, 253)).isEqualTo(Math.scalb(Float.MAX_VALUE, -253));
    }

    @Test
    void flushesWhatWouldLeaveTheNormalRangeToZero() {
      assertThat(ReferenceAttention.timesPowerOfTwo(Float.MIN_NORMAL, 1)).isEqualTo(0f);
      assertThat(ReferenceAttention.timesPowerOfTwo(Float.MAX_VALUE, 254)).isEqualTo(0f); // would be subnormal
      assertThat(ReferenceAttention.timesPowerOfTwo(-0x1p-120f, 7)).isEqualTo(0f);
      assertThat(ReferenceAttention.timesPowerOfTwo(1f, 300)).isEqualTo(0f);
      assertThat(ReferenceAttention.timesPowerOfTwo(0f, 1)).isEqualTo(0f);
      assertThat(ReferenceAttention.timesPowerOfTwo(Float.MIN_VALUE, 1)).isEqualTo(0f);
    }
  }
}
