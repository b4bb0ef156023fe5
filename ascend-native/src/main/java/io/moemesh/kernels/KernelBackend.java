package io.moemesh.kernels;

import java.lang.System.Logger.Level;

/** Which {@link Kernels} implementation runs: the setting {@code kernels=reference|native}. */
public enum KernelBackend {
  /** Plain scalar Java: the spec, slow, always available. */
  REFERENCE,
  /** C with AVX-512 (VNNI, BF16), AVX2 or portable paths, through the FFM API. */
  NATIVE;

  private static final System.Logger LOG = System.getLogger(KernelBackend.class.getName());

  /**
   * The kernels for this setting. {@code NATIVE} falls back to {@code REFERENCE}, with one warning saying
   * why, when the native library cannot be loaded on this machine.
   */
  public Kernels open(int threads) {
    if (this == REFERENCE) return new ReferenceKernels();
    try {
      NativeKernels kernels = NativeKernels.create(threads);
      LOG.log(Level.INFO, "kernels: " + kernels.name() + " (" + NativeKernels.requestedIsa().map(i -> "forced by " + NativeKernels.ISA_VARIABLE)
          .orElse("the best this CPU runs") + ")");
      return kernels;
    } catch (KernelException | IllegalArgumentException e) { // a path the CPU lacks, or a typo in the setting: not a fallback
      throw e;
    } catch (LinkageError | RuntimeException e) { // a missing library surfaces as an initializer or link error
      LOG.log(Level.WARNING, "native kernels unavailable (" + e.getMessage() + "); falling back to reference kernels, which are much slower");
      return new ReferenceKernels();
    }
  }

  /** Parses {@code reference} or {@code native} (any case), with a clear error otherwise. */
  public static KernelBackend parse(String value) {
    for (KernelBackend b : values()) if (b.name().equalsIgnoreCase(value.trim())) return b;
    throw new IllegalArgumentException("kernels must be 'reference' or 'native', got '" + value + "'");
  }
}
