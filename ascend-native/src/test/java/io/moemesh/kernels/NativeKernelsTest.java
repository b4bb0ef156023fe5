package io.moemesh.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/** The C kernels, on each path this CPU can run, held to the contract of {@link ReferenceKernels}. */
class NativeKernelsTest {

  @Nested
  @TestInstance(TestInstance.Lifecycle.PER_CLASS)
  class Avx512Path extends KernelsContract {
    private final NativeKernels kernels = NativeKernels.cpuHasAvx512() ? NativeKernels.create(2, NativeKernels.Isa.AVX512) : null;

    @Override
    Kernels kernels() {
      assumeTrue(kernels != null, "this CPU has no AVX-512 VNNI/BF16");
      return kernels;
    }

    @AfterAll
    void close() {
      if (kernels != null) kernels.close();
    }
  }

  /** The AVX-512 table with the portable BF16 × BF16 matmul, as on a CPU without AVX512-BF16. */
  @Nested
  @TestInstance(TestInstance.Lifecycle.PER_CLASS)
  class Avx512NoBf16Path extends KernelsContract {
    private final NativeKernels kernels = NativeKernels.cpuSupports(NativeKernels.Isa.AVX512_NO_BF16)
        ? NativeKernels.create(2, NativeKernels.Isa.AVX512_NO_BF16) : null;

    @Override
    Kernels kernels() {
      assumeTrue(kernels != null, "this CPU has no AVX-512 VNNI");
      return kernels;
    }

    @AfterAll
    void close() {
      if (kernels != null) kernels.close();
    }
  }

  @Nested
  @TestInstance(TestInstance.Lifecycle.PER_CLASS)
  class Avx2Path extends KernelsContract {
    private final NativeKernels kernels = NativeKernels.cpuSupports(NativeKernels.Isa.AVX2)
        ? NativeKernels.create(2, NativeKernels.Isa.AVX2) : null;

    @Override
    Kernels kernels() {
      assumeTrue(kernels != null, "this CPU has no AVX2 + FMA + F16C");
      return kernels;
    }

    @AfterAll
    void close() {
      if (kernels != null) kernels.close();
    }
  }

  @Nested
  @TestInstance(TestInstance.Lifecycle.PER_CLASS)
  class PortablePath extends KernelsContract {
    private final NativeKernels kernels = NativeKernels.create(2, NativeKernels.Isa.PORTABLE);

    @Override
    Kernels kernels() {
      return kernels;
    }

    @AfterAll
    void close() {
      kernels.close();
    }
  }

  @Nested
  class ThreadCount {
    /** Large enough that every op splits its work across threads. */
    @Test
    void resultsAreBitIdenticalOnOneAndThreeThreads() {
      try (var arena = TensorArena.open(); var one = NativeKernels.create(1); var three = NativeKernels.create(3)) {
        var rnd = new Random(11);
        Tensor x = random(arena, rnd, DType.F32, 9, 1021);
        Tensor w = random(arena, rnd, DType.BF16, 523, 1021);
        Tensor a = arena.allocate(DType.F32, 9, 523), b = arena.allocate(DType.F32, 9, 523);
        one.matmul(a, x, w);
        three.matmul(b, x, w);
        assertThat(b.toFloatArray()).containsExactly(a.toFloatArray());

        Tensor xq = arena.allocate(DType.I8, 9, 1021), xs = arena.allocate(DType.F32, 9);
        one.quantizeRows(xq, xs, x);
        Tensor wq = arena.allocate(DType.I8, 523, 1021), ws = arena.allocate(DType.F32, 523);
        one.quantizeRows(wq, ws, w);
        one.matmulInt8(a, xq, xs, wq, ws);
        three.matmulInt8(b, xq, xs, wq, ws);
        assertThat(b.toFloatArray()).containsExactly(a.toFloatArray());

        int heads = 8, rank = 64, rope = 16, pageSize = 16, pages = 200;
        Tensor kv = random(arena, rnd, DType.BF16, pages, pageSize, rank + rope);
        Tensor ql = random(arena, rnd, DType.F32, 3, heads, rank), qr = random(arena, rnd, DType.F32, 3, heads, rope);
        int[] table = new int[3 * 150];
        for (int i = 0; i < table.length; i++) table[i] = rnd.nextInt(pages);
        var paged = new PagedLatentKv(kv, arena.ofInts(table, 3, 150), arena.ofInts(new int[] {2400, 1, 777}, 3));
        Tensor oa = arena.allocate(DType.F32, 3, heads, rank), ob = arena.allocate(DType.F32, 3, heads, rank);
        one.mlaDecode(oa, ql, qr, paged, 0.125f);
        three.mlaDecode(ob, ql, qr, paged, 0.125f);
        assertThat(ob.toFloatArray()).containsExactly(oa.toFloatArray());
      }
    }
  }

  /**
   * The grouped A8W8 matmul at a MoE layer's decode shape (40 experts of 1 to 3 rows, some empty), large enough
   * to split across threads: on 1, 2 and 3 threads the bits of matmulInt8 expert by expert on one thread.
   */
  @Nested
  class GroupedThreadCount {
    @Test
    void groupedEqualsPerGroupMatmulInt8OnOneTwoAndThreeThreads() {
      int groups = 48, m = 523, k = 1021;
      try (var arena = TensorArena.open(); var one = NativeKernels.create(1); var two = NativeKernels.create(2);
           var three = NativeKernels.create(3)) {
        var rnd = new Random(23);
        int[] offsets = new int[groups + 1];
        for (int g = 0; g < groups; g++) offsets[g + 1] = offsets[g] + (g % 6 == 5 ? 0 : 1 + rnd.nextInt(3));
        int n = offsets[groups];
        Tensor xq = arena.allocate(DType.I8, n, k), xs = random(arena, rnd, DType.F32, n);
        for (long i = 0; i < xq.numElements(); i++) xq.setByte(i, (byte) (rnd.nextInt(255) - 127));
        Tensor[] w = new Tensor[groups], ws = new Tensor[groups];
        Tensor expected = arena.allocate(DType.F32, n, m);
        for (int g = 0; g < groups; g++) {
          if (offsets[g + 1] == offsets[g]) continue;
          w[g] = arena.allocate(DType.I8, m, k);
          for (long i = 0; i < w[g].numElements(); i++) w[g].setByte(i, (byte) (rnd.nextInt(255) - 127));
          ws[g] = random(arena, rnd, DType.F32, m);
          one.matmulInt8(expected.rows(offsets[g], offsets[g + 1]), xq.rows(offsets[g], offsets[g + 1]),
              xs.rows(offsets[g], offsets[g + 1]), w[g], ws[g]);
        }
        Tensor rowOffsets = arena.ofInts(offsets, groups + 1);
        for (NativeKernels kernels : List.of(one, two, three)) {
          Tensor out = arena.allocate(DType.F32, n, m);
          kernels.matmulInt8Grouped(out, xq, xs, rowOffsets, w, ws);
          assertThat(out.toFloatArray()).as(kernels.name()).containsExactly(expected.toFloatArray());
        }
      }
    }
  }

  /**
   * Batch invariance of the matmul on BF16 weights, with BF16 and with F32 activations: a row's output bits do not
   * depend on how many rows share the call (n = 1, 2, 3 run the 16-row GEMV row by row, n ≥ 4 the GEMM tiles and
   * their edges), where the row sits in its tile, or the thread count; on every path this CPU runs.
   */
  @Nested
  class Bf16RowIndependence {
    @ParameterizedTest(name = "{0}, {1} activations")
    @CsvSource({"AVX512, BF16", "AVX512, F32", "AVX512_NO_BF16, BF16", "AVX512_NO_BF16, F32", "AVX2, BF16", "AVX2, F32",
        "PORTABLE, BF16", "PORTABLE, F32"})
    void aRowsBitsAreTheSameForEveryBatchSizeOffsetAndThreadCount(NativeKernels.Isa isa, DType activations) {
      assumeTrue(NativeKernels.cpuSupports(isa), "this CPU cannot run " + isa);
      int rows = 36, m = 523, k = 1021;
      try (var arena = TensorArena.open(); var one = NativeKernels.create(1, isa); var two = NativeKernels.create(2, isa);
           var three = NativeKernels.create(3, isa)) {
        var rnd = new Random(17);
        Tensor x = random(arena, rnd, activations, rows, k);
        Tensor w = random(arena, rnd, DType.BF16, m, k);
        Tensor all = arena.allocate(DType.F32, rows, m);
        one.matmul(all, x, w);
        float[] expected = all.toFloatArray();
        for (NativeKernels kernels : List.of(one, two, three))
          for (int n : new int[] {1, 2, 3, 4, 5, 8, 33})
            for (int start : new int[] {0, 1, 3}) {
              Tensor out = arena.allocate(DType.F32, n, m);
              kernels.matmul(out, x.rows(start, start + n), w);
              float[] got = out.toFloatArray();
              for (int r = 0; r < n; r++)
                assertThat(Arrays.copyOfRange(got, r * m, (r + 1) * m))
                    .as("%s: row %d at n = %d from row %d", kernels.name(), start + r, n, start)
                    .containsExactly(Arrays.copyOfRange(expected, (start + r) * m, (start + r + 1) * m));
            }
      }
    }
  }

  /**
   * The thread pool under a stream of calls, as in decode: hundreds of calls in a row from one context, two ops
   * taking turns and each of a random size, so the pool cuts them into 1 to a dozen parts. Every call writes
   * over NaN and must give the bits of a whole-matrix run (A8W8: the reference's; BF16 × BF16: one thread's), so
   * a part lost, run with the previous call's arguments, or computed differently for where its bounds fell shows.
   */
  @Nested
  class BackToBackCalls {
    @Test
    void everyCallOfAStreamOfVaryingSizesHasTheBitsOfAWholeRun() {
      int maxRows = 10, maxM = 600, k = 1024;
      try (var arena = TensorArena.open(); var one = NativeKernels.create(1); var three = NativeKernels.create(3)) {
        var rnd = new Random(29);
        Tensor x = random(arena, rnd, DType.BF16, maxRows, k), w = random(arena, rnd, DType.BF16, maxM, k);
        Tensor xq = arena.allocate(DType.I8, maxRows, k), xs = arena.allocate(DType.F32, maxRows);
        Tensor wq = arena.allocate(DType.I8, maxM, k), ws = arena.allocate(DType.F32, maxM);
        one.quantizeRows(xq, xs, x);
        one.quantizeRows(wq, ws, w);
        Tensor int8All = arena.allocate(DType.F32, maxRows, maxM), bf16All = arena.allocate(DType.F32, maxRows, maxM);
        new ReferenceKernels().matmulInt8(int8All, xq, xs, wq, ws);
        one.matmul(bf16All, x, w);
        Tensor out = arena.allocate(DType.F32, maxRows, maxM);
        float[] nan = new float[maxRows * maxM];
        Arrays.fill(nan, Float.NaN);
        for (int call = 0; call < 300; call++) {
          int n = 1 + rnd.nextInt(maxRows), m = 1 + rnd.nextInt(maxM);
          Tensor o = out.rows(0, n).cols(0, m);
          out.copyFrom(nan);
          three.matmulInt8(o, xq.rows(0, n), xs.rows(0, n), wq.rows(0, m), ws.rows(0, m));
          assertSameRows(o, int8All, "A8W8 call " + call);
          out.copyFrom(nan);
          three.matmul(o, x.rows(0, n), w.rows(0, m));
          assertSameRows(o, bf16All, "BF16 call " + call);
        }
      }
    }

    /** Each row of {@code got} (n, m) equals the first m values of the same row of {@code all}. */
    private void assertSameRows(Tensor got, Tensor all, String what) {
      int n = got.dim(0), m = got.dim(1);
      for (int r = 0; r < n; r++) {
        float[] row = got.rows(r, r + 1).toFloatArray();
        float[] expected = Arrays.copyOf(all.rows(r, r + 1).toFloatArray(), m);
        assertThat(row).as("%s: row %d of (%d, %d)", what, r, n, m).containsExactly(expected);
      }
    }
  }

  @Nested
  class Blocking {
    /** Past one 1024-byte k block and one 128-row activation block: the GEMM's blocked path, exact. */
    @Test
    void int8GemmAcrossKAndRowBlocksEqualsTheReference() {
      try (var arena = TensorArena.open(); var kernels = NativeKernels.create(2)) {
        var rnd = new Random(5);
        int n = 133, m = 37, k = 2500;
        Tensor xq = arena.allocate(DType.I8, n, k), w = arena.allocate(DType.I8, m, k);
        for (long i = 0; i < xq.numElements(); i++) xq.setByte(i, (byte) (rnd.nextInt(255) - 127));
        for (long i = 0; i < w.numElements(); i++) w.setByte(i, (byte) (rnd.nextInt(255) - 127));
        Tensor xs = random(arena, rnd, DType.F32, n), ws = random(arena, rnd, DType.F32, m);
        Tensor expected = arena.allocate(DType.F32, n, m), actual = arena.allocate(DType.F32, n, m);
        new ReferenceKernels().matmulInt8(expected, xq, xs, w, ws);
        kernels.matmulInt8(actual, xq, xs, w, ws);
        assertThat(actual.toFloatArray()).containsExactly(expected.toFloatArray());
      }
    }
  }

  @Nested
  class Selection {
    @Test
    void nativeBackendLoadsTheLibraryAndNamesItsPath() {
      try (var kernels = (NativeKernels) KernelBackend.NATIVE.open(2)) {
        assertThat(kernels.name()).startsWith("native-").endsWith("-2t");
        var best = NativeKernels.cpuSupports(NativeKernels.Isa.AVX512) ? NativeKernels.Isa.AVX512
            : NativeKernels.cpuSupports(NativeKernels.Isa.AVX512_NO_BF16) ? NativeKernels.Isa.AVX512_NO_BF16
            : NativeKernels.cpuSupports(NativeKernels.Isa.AVX2) ? NativeKernels.Isa.AVX2
            : NativeKernels.Isa.PORTABLE;
        assertThat(kernels.isa()).isEqualTo(best);
      }
    }

    /** MOEMESH_KERNELS_ISA's property form picks the path of create(threads); auto or unset picks the best. */
    @Test
    void theRequestedPathIsTheOneThatRunsAndATypoIsAnError() {
      String before = System.getProperty(NativeKernels.ISA_PROPERTY);
      try {
        System.setProperty(NativeKernels.ISA_PROPERTY, "portable");
        try (var kernels = NativeKernels.create(1)) {
          assertThat(kernels.isa()).isEqualTo(NativeKernels.Isa.PORTABLE);
          assertThat(kernels.name()).isEqualTo("native-portable-1t");
        }
        System.setProperty(NativeKernels.ISA_PROPERTY, "AVX512_no_bf16");
        assertThat(NativeKernels.requestedIsa()).contains(NativeKernels.Isa.AVX512_NO_BF16);
        System.setProperty(NativeKernels.ISA_PROPERTY, "auto");
        assertThat(NativeKernels.requestedIsa()).isEmpty();
        System.setProperty(NativeKernels.ISA_PROPERTY, "avx3");
        assertThatThrownBy(NativeKernels::requestedIsa).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("avx3").hasMessageContaining("avx2");
        for (var isa : NativeKernels.Isa.values()) {
          System.setProperty(NativeKernels.ISA_PROPERTY, isa.key());
          if (NativeKernels.cpuSupports(isa))
            try (var kernels = NativeKernels.create(1)) {
              assertThat(kernels.isa()).isEqualTo(isa);
            }
          else assertThatThrownBy(() -> NativeKernels.create(1)).isInstanceOf(KernelException.class).hasMessageContaining(isa.key());
        }
      } finally {
        if (before == null) System.clearProperty(NativeKernels.ISA_PROPERTY);
        else System.setProperty(NativeKernels.ISA_PROPERTY, before);
      }
    }

    /** AVX512-BF16 implies the rest of the AVX-512 set; the forced path is the one that runs. */
    @Test
    void everySupportedPathCanBeForcedAndTheBestNeedsTheOthers() {
      assertThat(NativeKernels.cpuSupports(NativeKernels.Isa.PORTABLE)).isTrue();
      if (NativeKernels.cpuHasAvx512()) assertThat(NativeKernels.cpuSupports(NativeKernels.Isa.AVX512_NO_BF16)).isTrue();
      for (var isa : NativeKernels.Isa.values()) {
        if (!NativeKernels.cpuSupports(isa)) {
          assertThatThrownBy(() -> NativeKernels.create(1, isa)).isInstanceOf(KernelException.class).hasMessageContaining(isa.key());
          continue;
        }
        try (var kernels = NativeKernels.create(1, isa)) {
          assertThat(kernels.isa()).isEqualTo(isa);
        }
      }
    }

    /** A JVM whose native library cannot load still gets kernels: the reference, with one warning saying why. */
    @Test
    void nativeFallsBackToTheReferenceWhenTheLibraryCannotLoad() throws Exception {
      var command = java.util.List.of(java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "--enable-native-access=ALL-UNNAMED", "-D" + NativeLibrary.PROPERTY + "=/nonexistent/libmoemesh_kernels.so",
          "-cp", System.getProperty("java.class.path"), FallbackProbe.class.getName());
      Process p = new ProcessBuilder(command).start();
      String out = new String(p.getInputStream().readAllBytes()), err = new String(p.getErrorStream().readAllBytes());
      assertThat(p.waitFor()).as(err).isZero();
      assertThat(out.trim()).isEqualTo("reference");
      assertThat(err).contains("native kernels unavailable").contains("/nonexistent/libmoemesh_kernels.so").contains("falling back");
    }

    /** Each path's peak loops run: a rate above any machine's (10⁵ GOP/s) means the compiler folded the loop away. */
    @ParameterizedTest
    @EnumSource(NativeKernels.Isa.class)
    void peaksArePositiveAndReal(NativeKernels.Isa isa) {
      assumeTrue(NativeKernels.cpuSupports(isa), isa + " needs a CPU this is not");
      try (var kernels = NativeKernels.create(1, isa)) {
        assertThat(kernels.measureInt8PeakGops(100_000)).isPositive().isLessThan(1e5);
        assertThat(kernels.measureBf16PeakGops(100_000)).isPositive().isLessThan(1e5);
      }
    }
  }

  private static Tensor random(TensorArena arena, Random rnd, DType dtype, int... shape) {
    Tensor t = arena.allocate(dtype, shape);
    for (long i = 0; i < t.numElements(); i++) t.setFloat(i, (float) rnd.nextGaussian());
    return t;
  }
}
