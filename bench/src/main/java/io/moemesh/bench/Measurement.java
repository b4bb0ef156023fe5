package io.moemesh.bench;

/**
 * One figure of a benchmark run.
 *
 * @param name what was measured ({@code triad}, {@code gemv_int8}, ...)
 * @param shape the problem size, for humans
 * @param threads threads the measurement ran on
 * @param value the figure, in {@code unit}
 * @param unit {@code GB/s} (1e9 bytes per second) or {@code GOP/s} (1e9 operations per second)
 * @param ratio {@code value} divided by the reference figure {@code ratioTo} at the same thread count, or null
 * @param ratioTo {@code triad} or {@code int8_peak}, or null when this is a reference figure itself
 * @param stat how repetitions were summarized: {@code best of N} (STREAM's rule) or {@code median of N}
 */
record Measurement(String name, String shape, int threads, double value, String unit, Double ratio, String ratioTo, String stat) {}
