package io.moemesh.bench;

import java.util.List;
import java.util.stream.Collectors;

/**
 * How {@code bench serve} sends its measured requests: a closed loop ({@code --concurrency} workers, each sending its
 * next request when the last one ends), or arrivals at a given rate regardless of the answers (an open loop, vLLM's
 * {@code --request-rate}): Poisson at one rate, or a schedule of {@link RatePhase}s ({@code --ramp}).
 */
sealed interface Load {
  /** For the report, e.g. {@code closed loop} or {@code ramp 2:60,8:120}. */
  String describe();

  record ClosedLoop() implements Load {
    @Override
    public String describe() {
      return "closed loop";
    }
  }

  /** {@code rate} requests per second with exponential gaps; infinite: every request at once. */
  record Poisson(double rate) implements Load {
    public Poisson {
      if (!(rate > 0)) throw new IllegalArgumentException("the request rate must be > 0 (or infinite), got " + rate);
    }

    @Override
    public String describe() {
      return Double.isInfinite(rate) ? "all at once (rate inf)" : "Poisson, " + RatePhase.trim(rate) + " req/s";
    }
  }

  record Ramp(List<RatePhase> phases) implements Load {
    public Ramp {
      phases = List.copyOf(phases);
      if (phases.isEmpty()) throw new IllegalArgumentException("a ramp needs at least one phase");
    }

    @Override
    public String describe() {
      return "Poisson ramp " + phases.stream().map(p -> RatePhase.trim(p.rate()) + ":" + RatePhase.trim(p.seconds()))
          .collect(Collectors.joining(","));
    }
  }
}
