package io.moemesh.kernels;

import static io.moemesh.kernels.ContractBase.seed;
import static io.moemesh.kernels.DType.BF16;
import static io.moemesh.kernels.DType.F32;
import static io.moemesh.kernels.TestTensors.garbage;
import static io.moemesh.kernels.TestTensors.uniform;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.kernels.ContractChecks.Call;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contract of the attention ops — mlaDecode over the paged latent cache, and causal attention — one
 * interface per op, run as a {@code @Nested} group of {@link KernelsContract}. Both match the reference within
 * tolerance of max |v| · (1 + scale · max Σ|q·k|) (see {@link KernelsContract}'s class comment), at a
 * plain and a sharp softmax.
 */
final class AttentionContract {
  private AttentionContract() {}

  interface MlaDecode extends ContractBase {
    /**
     * (nq, heads, kvLoraRank, ropeDim, pageSize, maxPages, pages dtype, query dtype): tiny, DeepSeek's dims, odd
     * ones, many heads; over BF16 pages with an F32 and with a BF16 query.
     */
    static Stream<Arguments> shapes() {
      return Stream.of(
          Arguments.of(1, 1, 16, 8, 1, 3, F32, F32),
          Arguments.of(3, 4, 64, 16, 16, 4, BF16, F32),
          Arguments.of(3, 4, 64, 16, 16, 4, BF16, BF16),
          Arguments.of(3, 3, 512, 64, 16, 3, BF16, F32),
          Arguments.of(3, 3, 512, 64, 16, 3, BF16, BF16),
          Arguments.of(5, 2, 32, 8, 7, 5, F32, F32),
          Arguments.of(4, 2, 131, 7, 5, 4, BF16, F32),
          Arguments.of(4, 2, 131, 7, 5, 4, BF16, BF16),
          Arguments.of(2, 22, 64, 16, 16, 3, BF16, BF16), // two head groups of 11: a group per work unit
          Arguments.of(9, 20, 64, 16, 16, 3, BF16, BF16), // rows enough for every thread: 20 heads in one unit, two tiles
          Arguments.of(5, 16, 256, 32, 64, 20, BF16, F32), // the bench model's dims, contexts up to 1280: rows in chunks
          Arguments.of(5, 16, 256, 32, 64, 20, BF16, BF16));
    }

    /** Attention on in = {qLatent, qRope, pages, blockTable, contextLens}. */
    static Call call(float softmaxScale) {
      return (k, out, in) -> k.mlaDecode(out[0], in[0], in[1], new PagedLatentKv(in[2], in[3], in[4]), softmaxScale);
    }

    /** DeepSeek's 1/√(qk head dim) times {@code sharpness}: large values move the running max often and far. */
    private static float scale(int rank, int rope, float sharpness) {
      return sharpness / (float) Math.sqrt(rank + rope);
    }

    /**
     * qLatent, qRope, pages, blockTable, contextLens. Row 0 sees one position, row 1 ends in a partly filled
     * page, row 2 fills all its pages, the rest are random.
     */
    private Tensor[] inputs(Random random, int nq, int heads, int rank, int rope, int pageSize, int maxPages,
        DType pagesType) {
      return inputs(random, nq, heads, rank, rope, pageSize, maxPages, pagesType, F32);
    }

    private Tensor[] inputs(Random random, int nq, int heads, int rank, int rope, int pageSize, int maxPages,
        DType pagesType, DType queryType) {
      TensorArena arena = arena();
      int numPages = nq * maxPages / 2 + 1;
      int capacity = maxPages * pageSize;
      int[] lens = new int[nq];
      for (int t = 0; t < nq; t++) {
        lens[t] = switch (t) {
          case 0 -> 1;
          case 1 -> Math.max(1, capacity - pageSize + 1);
          case 2 -> capacity;
          default -> 1 + random.nextInt(capacity);
        };
      }
      return new Tensor[] {
          uniform(arena, random, queryType, 1, nq, heads, rank), uniform(arena, random, queryType, 1, nq, heads, rope),
          uniform(arena, random, pagesType, 1, numPages, pageSize, rank + rope),
          TestTensors.ints(arena, random, 0, numPages, nq, maxPages), arena.ofInts(lens, nq)};
    }

    /** Per output row (t, h), {@link Attention#errorScale}: see {@link KernelsContract}'s class comment. */
    private static double[] attentionMagnitude(Tensor[] in, float softmaxScale) {
      var problem = new Attention(in[0], in[1], in[2], in[3], in[4]);
      int nq = in[0].dim(0);
      int heads = in[0].dim(1);
      int rank = in[0].dim(2);
      double[] magnitude = new double[nq * heads * rank];
      for (int t = 0; t < nq; t++)
        for (int h = 0; h < heads; h++)
          Arrays.fill(magnitude, (t * heads + h) * rank, (t * heads + h + 1) * rank,
              problem.errorScale(t, h, softmaxScale));
      return magnitude;
    }

    @ParameterizedTest(name = "nq {0}, heads {1}, rank {2}+{3}, pages of {4} × {5} {6}, query {7}")
    @MethodSource("shapes")
    default void matchesReferenceWithinToleranceOfLatentAndScoreMagnitude(int nq, int heads, int rank, int rope,
        int pageSize, int maxPages, DType pagesType, DType queryType) {
      for (float sharpness : new float[] {1, 30}) {
        var random = new Random(seed(nq, heads, rank, rope, pageSize, sharpness));
        Tensor[] in = inputs(random, nq, heads, rank, rope, pageSize, maxPages, pagesType, queryType);
        float scale = scale(rank, rope, sharpness);
        Tensor actual = check().actual("mlaDecode", call(scale), in, garbage(arena(), F32, nq, heads, rank))[0];
        Tensor expected = check().expected(call(scale), in, garbage(arena(), F32, nq, heads, rank))[0];
        assertWithinTolerance("mlaDecode", actual, expected, attentionMagnitude(in, scale));
      }
    }

    /**
     * The softmax weights are the spec's bit for bit (one polynomial in every backend), so a BF16 query's weights
     * round to the same BF16 too: positions (c_kv 0, k_pe 1) and (c_kv 1, k_pe 1/4), scored s and s/4, attend to
     * exactly w(s/4) / (w(s) + w(s/4)) in any order of the sums — over 200 scores, weights 2^0 down to 2^-80.
     */
    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"F32", "BF16"})
    default void weighsPositionsWithTheSpecsWeightsBitForBit(DType queryType) {
      TensorArena arena = arena();
      Tensor pages = arena.allocate(BF16, 1, 2, 2);
      pages.copyFrom(new float[] {0, 1, 1, 0.25f});
      Tensor qRope = arena.allocate(queryType, 1, 1, 1);
      qRope.setFloat(0, 1);
      Tensor[] in = {arena.allocate(queryType, 1, 1, 1), qRope, pages, arena.ofInts(new int[] {0}, 1, 1),
          arena.ofInts(new int[] {2}, 1)};
      for (int i = 1; i <= 200; i++) {
        float scale = i * 0.37f;
        float actual = check().actual("mlaDecode", call(scale), in, garbage(arena, F32, 1, 1, 1))[0].getFloat(0);
        float expected = check().expected(call(scale), in, garbage(arena, F32, 1, 1, 1))[0].getFloat(0);
        assertThat(actual).as("scale %s", scale).isEqualTo(expected);
      }
    }

    /** Short contexts, and long ones that a row splits into chunks by its own length (up to 1280 positions). */
    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"F32", "BF16"})
    default void rowsAreIndependentOfTheBatch(DType queryType) {
      for (Tensor[] in : List.of(inputs(new Random(34), 6, 4, 64, 16, 8, 4, BF16, queryType),
          inputs(new Random(35), 6, 4, 64, 16, 64, 20, BF16, queryType))) {
        check().rowsIndependent("mlaDecode", (k, out, from, to) -> k.mlaDecode(out[0], in[0].rows(from, to),
            in[1].rows(from, to), new PagedLatentKv(in[2], in[3].rows(from, to), in[4].rows(from, to)), 0.125f),
            6, garbage(arena(), F32, 6, 4, 64));
      }
    }

    /**
     * A head's bits do not depend on the heads beside it (tiles of 4 heads and their edges, head groups): 7 heads
     * at once equal each head alone, at a plain softmax and a very sharp one (weights below 2^-126 of the running
     * max, which become zero), over context lengths that end in partial blocks.
     */
    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"F32", "BF16"})
    default void headsAreIndependentOfTheOtherHeads(DType queryType) {
      int nq = 4, heads = 7, rank = 64, rope = 16;
      Tensor[] in = inputs(new Random(41), nq, heads, rank, rope, 8, 6, BF16, queryType);
      for (float scale : new float[] {0.125f, 8f}) {
        float[] all = check().actual("mlaDecode", call(scale), in, garbage(arena(), F32, nq, heads, rank))[0].toFloatArray();
        for (int h = 0; h < heads; h++) {
          Tensor[] alone = {head(in[0], h), head(in[1], h), in[2], in[3], in[4]};
          float[] one = check().actual("mlaDecode", call(scale), alone, garbage(arena(), F32, nq, 1, rank))[0].toFloatArray();
          for (int t = 0; t < nq; t++)
            assertThat(Arrays.copyOfRange(one, t * rank, (t + 1) * rank)).as("scale %s: row %d head %d alone", scale, t, h)
                .containsExactly(Arrays.copyOfRange(all, (t * heads + h) * rank, (t * heads + h + 1) * rank));
        }
      }
    }

    /** Head h of a (nq, heads, d) query as a (nq, 1, d) tensor. */
    private Tensor head(Tensor q, int h) {
      int nq = q.dim(0), heads = q.dim(1), d = q.dim(2);
      Tensor one = arena().allocate(q.dtype(), nq, 1, d);
      for (int t = 0; t < nq; t++)
        for (int c = 0; c < d; c++) one.setFloat((long) t * d + c, q.getFloat(((long) t * heads + h) * d + c));
      return one;
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"F32", "BF16"})
    default void acceptsRowStridedQueriesOutputAndBlockTable(DType queryType) {
      Tensor[] in = inputs(new Random(35), 3, 4, 64, 16, 8, 4, BF16, queryType);
      check().viewsAgree("mlaDecode", call(0.125f), in, new Tensor[] {garbage(arena(), F32, 3, 4, 64)}, in[2]);
    }

    @Test
    default void rejectsPageIdsAndContextLengthsOutOfRangeWritingNothing() {
      TensorArena arena = arena();
      ContractChecks check = check();
      Tensor[] in = inputs(new Random(36), 3, 2, 16, 8, 4, 3, F32);
      Tensor out = garbage(arena, F32, 3, 2, 16);
      int numPages = in[2].dim(0);
      for (int badPage : new int[] {-1, numPages}) {
        Tensor blockTable = TestTensors.copy(arena, in[3]);
        blockTable.setInt(2L * 3, badPage); // row 2's first page: always used
        check.rejected("mlaDecode", k -> k.mlaDecode(out, in[0], in[1], new PagedLatentKv(in[2], blockTable, in[4]), 0.5f), out);
      }
      for (int badLength : new int[] {0, -3, 3 * 4 + 1}) {
        Tensor lens = arena.ofInts(new int[] {1, 2, badLength}, 3);
        check.rejected("mlaDecode", k -> k.mlaDecode(out, in[0], in[1], new PagedLatentKv(in[2], in[3], lens), 0.5f), out);
      }
      Tensor wideRope = uniform(arena, new Random(37), F32, 1, 3, 2, 9);
      check.rejected("mlaDecode", k -> k.mlaDecode(out, in[0], wideRope, new PagedLatentKv(in[2], in[3], in[4]), 0.5f), out);
      Tensor[] bf16Query = inputs(new Random(38), 3, 2, 16, 8, 4, 3, F32, BF16); // a BF16 query needs BF16 pages
      check.rejected("mlaDecode", k -> k.mlaDecode(out, bf16Query[0], bf16Query[1], new PagedLatentKv(bf16Query[2], bf16Query[3], bf16Query[4]), 0.5f), out);
      Tensor bf16Rope = uniform(arena, new Random(39), BF16, 1, 3, 2, 8); // qLatent F32, qRope BF16: mixed
      check.rejected("mlaDecode", k -> k.mlaDecode(out, in[0], bf16Rope, new PagedLatentKv(in[2], in[3], in[4]), 0.5f), out);
    }
  }

  interface CausalAttention extends ContractBase {
    /**
     * (nq, nk, heads, dqk, dv): one token, a short prompt, DeepSeek's head dims, a chunk after a prefix, the bench
     * model's head dims over many tiles of 4 rows and a partial one.
     */
    static Stream<Arguments> shapes() {
      return Stream.of(
          Arguments.of(1, 1, 1, 7, 5),
          Arguments.of(3, 3, 2, 64, 64),
          Arguments.of(17, 17, 3, 192, 128),
          Arguments.of(5, 12, 2, 131, 7),
          Arguments.of(70, 130, 4, 96, 64));
    }

    static Call call(float softmaxScale) {
      return (k, out, in) -> k.attention(out[0], in[0], in[1], in[2], in[3], softmaxScale);
    }

    /** q, k, v and causal lengths: the nq queries are the last nq of the nk keys (a chunk after a prefix). */
    private Tensor[] inputs(Random random, int nq, int nk, int heads, int dqk, int dv) {
      TensorArena arena = arena();
      int[] lens = new int[nq];
      for (int t = 0; t < nq; t++) lens[t] = nk - nq + t + 1;
      return new Tensor[] {uniform(arena, random, F32, 1, nq, heads, dqk), uniform(arena, random, F32, 1, nk, heads, dqk),
          uniform(arena, random, F32, 1, nk, heads, dv), arena.ofInts(lens, nq)};
    }

    /** max |v| · (1 + scale · max_j Σ_i |q_i·k_j,i|) per output row, as for mlaDecode. */
    private static double[] magnitude(Tensor[] in, float scale) {
      int nq = in[0].dim(0);
      int heads = in[0].dim(1);
      int dqk = in[0].dim(2);
      int dv = in[2].dim(2);
      double[] m = new double[nq * heads * dv];
      for (int t = 0; t < nq; t++) {
        for (int h = 0; h < heads; h++) {
          double largestValue = 0;
          double largestScore = 0;
          for (int j = 0; j < in[3].getInt(t); j++) {
            double sum = 0;
            for (int i = 0; i < dqk; i++) {
              sum += Math.abs((double) in[0].getFloat(((long) t * heads + h) * dqk + i)
                  * in[1].getFloat(((long) j * heads + h) * dqk + i));
            }
            largestScore = Math.max(largestScore, Math.abs(scale) * sum);
            for (int i = 0; i < dv; i++)
              largestValue = Math.max(largestValue, Math.abs(in[2].getFloat(((long) j * heads + h) * dv + i)));
          }
          Arrays.fill(m, (t * heads + h) * dv, (t * heads + h + 1) * dv, largestValue * (1 + largestScore));
        }
      }
      return m;
    }

    @ParameterizedTest(name = "nq {0}, nk {1}, heads {2}, dqk {3}, dv {4}")
    @MethodSource("shapes")
    default void matchesReferenceWithinToleranceOfValueAndScoreMagnitude(int nq, int nk, int heads, int dqk, int dv) {
      for (float sharpness : new float[] {1, 30}) {
        Tensor[] in = inputs(new Random(seed(nq, nk, heads, dqk, dv, sharpness)), nq, nk, heads, dqk, dv);
        float scale = sharpness / (float) Math.sqrt(dqk);
        Tensor actual = check().actual("attention", call(scale), in, garbage(arena(), F32, nq, heads, dv))[0];
        Tensor expected = check().expected(call(scale), in, garbage(arena(), F32, nq, heads, dv))[0];
        assertWithinTolerance("attention", actual, expected, magnitude(in, scale));
      }
    }

    /**
     * A prompt, and chunks after a prefix in the bench model's head dims: rows in units of 16 and groups of 4, values
     * in blocks of 64 positions, each row alone or beside others.
     */
    @Test
    default void rowsAreIndependentOfTheBatch() {
      for (int[] shape : new int[][] {{9, 9, 2, 64, 32}, {11, 40, 3, 96, 64}, {21, 150, 2, 96, 64}}) {
        int nq = shape[0], heads = shape[2], dv = shape[4];
        Tensor[] in = inputs(new Random(47), nq, shape[1], heads, shape[3], dv);
        check().rowsIndependent("attention",
            (k, out, from, to) -> k.attention(out[0], in[0].rows(from, to), in[1], in[2], in[3].rows(from, to), 0.125f), nq,
            garbage(arena(), F32, nq, heads, dv));
      }
    }

    @Test
    default void acceptsRowStridedViews() {
      Tensor[] in = inputs(new Random(48), 4, 6, 2, 24, 16);
      check().viewsAgree("attention", call(0.2f), in, new Tensor[] {garbage(arena(), F32, 4, 2, 16)});
    }

    @Test
    default void rejectsContextLengthsOutOfRangeWritingNothing() {
      TensorArena arena = arena();
      Tensor[] in = inputs(new Random(49), 3, 5, 2, 8, 4);
      Tensor out = garbage(arena, F32, 3, 2, 4);
      for (int bad : new int[] {0, 6}) {
        Tensor lens = arena.ofInts(new int[] {1, 2, bad}, 3);
        check().rejected("attention", k -> k.attention(out, in[0], in[1], in[2], lens, 0.5f), out);
      }
      Tensor threeHeads = uniform(arena, new Random(50), F32, 1, 5, 3, 8);
      check().rejected("attention", k -> k.attention(out, in[0], threeHeads, in[2], in[3], 0.5f), out);
      check().rejected("attention", k -> k.attention(out, in[0], in[1], in[2], arena.ofInts(new int[] {1, 2}, 2), 0.5f),
          out);
    }
  }
}
