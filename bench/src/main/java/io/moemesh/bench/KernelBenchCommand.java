package io.moemesh.bench;

import io.moemesh.cli.Cli;
import io.moemesh.cli.HelpOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code bench kernels}'s command line: {@link KernelBench.Options}. */
@Command(name = "kernels", sortOptions = false, sortSynopsis = false, description = {
    "Measure the native kernels at 1 and 2 threads: STREAM triad, INT8/BF16 GEMV, INT8 GEMM, BF16 x BF16 GEMM against"
        + " F32 x BF16, MLA decode, grouped MoE projections."})
final class KernelBenchCommand implements Callable<Integer> {
  @Mixin HelpOption help;
  @Spec CommandSpec spec;

  @Option(names = "--json", paramLabel = "FILE", description = "Also write the figures to FILE.")
  Path json;

  @Option(names = "--quick", description = "Fewer and shorter repetitions (about 30 s instead of 2 minutes).")
  boolean quick;

  @Option(names = "--only", split = "\\s*,\\s*", splitSynopsisLabel = ",", paramLabel = "CASE", completionCandidates = CaseNames.class,
      description = "Just these cases (with the cases they are compared with; triad always runs), e.g."
          + " gemm_bf16_bf16,gemv_bf16_bf16; cases: ${COMPLETION-CANDIDATES}.")
  List<String> only; // null: all

  /** The case names, for the usage. */
  static final class CaseNames implements Iterable<String> {
    @Override
    public java.util.Iterator<String> iterator() {
      return KernelCases.NAMES.iterator();
    }
  }

  KernelBench.Options options() {
    List<String> cases = only == null ? List.of() : only;
    for (String name : cases)
      if (!KernelCases.NAMES.contains(name))
        throw Cli.usageError(spec, "unknown case '" + name + "' (cases: " + String.join(", ", KernelCases.NAMES) + ")");
    return new KernelBench.Options(json, quick, Set.copyOf(cases));
  }

  @Override
  public Integer call() throws Exception {
    KernelBench.benchmark(options());
    return 0;
  }
}
