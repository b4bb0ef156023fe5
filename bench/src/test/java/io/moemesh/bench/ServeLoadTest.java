package io.moemesh.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.net.URI;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** bench serve's open loop without a server: the arrival schedules, goodput, the timeline and the options. */
class ServeLoadTest {

  @Nested
  class Poisson {
    private static final int N = 20_000;
    private static final double RATE = 4;
    private final ArrivalSchedule schedule = ArrivalSchedule.poisson(RATE, N, 1);

    private double[] gaps() {
      double[] gaps = new double[N - 1];
      for (int i = 1; i < N; i++) gaps[i - 1] = schedule.sendSeconds(i) - schedule.sendSeconds(i - 1);
      return gaps;
    }

    @Test
    void theFirstRequestGoesAtOnceAndTheRestInOrder() {
      assertThat(schedule.size()).isEqualTo(N);
      assertThat(schedule.sendSeconds(0)).isZero();
      assertThat(Arrays.stream(gaps()).min().orElseThrow()).isGreaterThanOrEqualTo(0);
      assertThat(schedule.phases()).isEmpty();
      assertThat(schedule.phaseOf(N - 1)).isZero();
    }

    /** Mean gap 1/R: its standard error is 0.25/√19999 = 0.0018 s, the bound 3 % = 4 standard errors. */
    @Test
    void theMeanRateIsTheRequestedOne() {
      double meanGap = Arrays.stream(gaps()).average().orElseThrow();
      assertThat(meanGap).isCloseTo(1 / RATE, within(0.03 / RATE));
      assertThat((N - 1) / schedule.endSeconds()).isCloseTo(RATE, within(0.03 * RATE));
    }

    /**
     * Exponential gaps: the Kolmogorov–Smirnov distance to 1 − e^(−Rt) stays under 1.63/√n (the 1 % level), the
     * share of gaps above the mean is e^−1, and the standard deviation equals the mean (a coefficient of variation
     * of 1; a fixed interval would give 0).
     */
    @Test
    void theGapsAreExponential() {
      double[] gaps = gaps();
      Arrays.sort(gaps);
      double ks = 0;
      for (int i = 0; i < gaps.length; i++) {
        double cdf = 1 - Math.exp(-RATE * gaps[i]);
        ks = Math.max(ks, Math.max((i + 1.0) / gaps.length - cdf, cdf - (double) i / gaps.length));
      }
      assertThat(ks).isLessThan(1.63 / Math.sqrt(gaps.length));
      double mean = Arrays.stream(gaps).average().orElseThrow();
      assertThat(Arrays.stream(gaps).filter(g -> g > mean).count() / (double) gaps.length).isCloseTo(Math.exp(-1), within(0.015));
      double sd = Math.sqrt(Arrays.stream(gaps).map(g -> (g - mean) * (g - mean)).sum() / (gaps.length - 1));
      assertThat(sd / mean).isCloseTo(1, within(0.05));
    }

    @Test
    void theSeedFixesTheSchedule() {
      ArrivalSchedule again = ArrivalSchedule.poisson(RATE, N, 1), other = ArrivalSchedule.poisson(RATE, N, 2);
      assertThat(again.sendSeconds(N - 1)).isEqualTo(schedule.sendSeconds(N - 1));
      assertThat(other.sendSeconds(1)).isNotEqualTo(schedule.sendSeconds(1));
    }

    @Test
    void anInfiniteRateSendsEverythingAtOnce() {
      ArrivalSchedule all = ArrivalSchedule.of(new Load.Poisson(Double.POSITIVE_INFINITY), 5, 3);
      for (int i = 0; i < 5; i++) assertThat(all.sendSeconds(i)).isZero();
      assertThat(ArrivalSchedule.of(new Load.ClosedLoop(), 5, 3)).isNull();
    }
  }

  @Nested
  class Ramp {
    private final List<RatePhase> phases = RatePhase.parseAll("--ramp", "2:60,8:120,2:60");

    @Test
    void eachArrivalFallsInsideItsPhaseAndPhasesFollowEachOther() {
      ArrivalSchedule s = ArrivalSchedule.ramp(phases, 5);
      assertThat(s.phases()).containsExactly(new RatePhase(2, 60), new RatePhase(8, 120), new RatePhase(2, 60));
      assertThat(List.of(s.phaseStart(0), s.phaseStart(1), s.phaseStart(2), s.endSeconds())).containsExactly(0.0, 60.0, 180.0, 240.0);
      int[] counts = new int[3];
      for (int i = 0; i < s.size(); i++) {
        int p = s.phaseOf(i);
        counts[p]++;
        assertThat(s.sendSeconds(i)).isGreaterThan(s.phaseStart(p)).isLessThan(s.phaseStart(p) + phases.get(p).seconds());
        if (i > 0) {
          assertThat(p).isGreaterThanOrEqualTo(s.phaseOf(i - 1));
          assertThat(s.sendSeconds(i)).isGreaterThanOrEqualTo(s.sendSeconds(i - 1));
        }
      }
      // Poisson counts: mean λ = rate × seconds, within 4 standard deviations √λ
      assertThat((double) counts[0]).isCloseTo(120, within(4 * Math.sqrt(120)));
      assertThat((double) counts[1]).isCloseTo(960, within(4 * Math.sqrt(960)));
      assertThat((double) counts[2]).isCloseTo(120, within(4 * Math.sqrt(120)));
      assertThat(counts[0] + counts[1] + counts[2]).isEqualTo(s.size());
    }

    @Test
    void eachPhaseKeepsItsOwnRateOverManyArrivals() {
      ArrivalSchedule s = ArrivalSchedule.ramp(List.of(new RatePhase(5, 400), new RatePhase(20, 400)), 9);
      int inFirst = 0;
      for (int i = 0; i < s.size(); i++) if (s.phaseOf(i) == 0) inFirst++;
      assertThat((double) inFirst).isCloseTo(2000, within(4 * Math.sqrt(2000)));
      assertThat((double) (s.size() - inFirst)).isCloseTo(8000, within(4 * Math.sqrt(8000)));
    }

    @Test
    void aPauseHasNoArrivals() {
      ArrivalSchedule s = ArrivalSchedule.ramp(RatePhase.parseAll("--ramp", "50:2,0:3,50:2"), 1);
      for (int i = 0; i < s.size(); i++) {
        assertThat(s.sendSeconds(i) < 2.0 || s.sendSeconds(i) >= 5.0).as("arrival at %s s", s.sendSeconds(i)).isTrue();
        assertThat(s.phaseOf(i)).isNotEqualTo(1);
      }
      assertThat(s.size()).isGreaterThan(100);
    }

    @Test
    void theOfferedRateOfAWindowAcrossABoundaryIsTheTimeWeightedMean() {
      var load = new Load.Ramp(phases);
      ArrivalSchedule s = ArrivalSchedule.ramp(phases, 5);
      assertThat(Timeline.offeredRate(load, s, 50, 70)).isCloseTo((2 * 10 + 8 * 10) / 20.0, within(1e-12));
      assertThat(Timeline.offeredRate(load, s, 100, 110)).isEqualTo(8);
      assertThat(Timeline.offeredRate(load, s, 240, 250)).isZero();
      assertThat(Timeline.offeredRate(new Load.ClosedLoop(), null, 0, 5)).isNaN();
    }
  }

  @Nested
  class Goodput {
    private final RequestResult fast = new RequestResult(true, null, 10, 11, 0.200, List.of(), 0.700); // TPOT 50 ms
    private final RequestResult slowStart = new RequestResult(true, null, 10, 11, 0.600, List.of(), 1.000); // TPOT 40 ms
    private final RequestResult slowTokens = new RequestResult(true, null, 10, 11, 0.100, List.of(), 1.100); // TPOT 100 ms
    private final RequestResult oneToken = new RequestResult(true, null, 10, 1, 0.300, List.of(), 0.300); // no TPOT
    private final RequestResult failed = RequestResult.failed(10, "HTTP 503", 0.01);

    @Test
    void aRequestIsGoodWhenItMeetsEveryNamedBoundInclusive() {
      Slos slos = Slos.parse("--goodput", List.of("ttft:500", "tpot:50"));
      assertThat(slos.met(fast)).isTrue(); // TPOT exactly at its bound
      assertThat(slos.met(slowStart)).isFalse();
      assertThat(slos.met(slowTokens)).isFalse();
      assertThat(slos.met(oneToken)).isTrue(); // vLLM: a single output token has TPOT 0
      assertThat(slos.met(failed)).isFalse();
      assertThat(Slos.parse("--goodput", List.of("e2el:999")).met(slowStart)).isFalse();
      assertThat(Slos.parse("--goodput", List.of("e2el:1000")).met(slowStart)).isTrue();
    }

    @Test
    void goodputIsGoodRequestsOverTheRunsDuration() {
      Slos slos = Slos.parse("--goodput", List.of("ttft:500,tpot:50"));
      ServeStats s = ServeStats.of(List.of(fast, slowStart, slowTokens, oneToken, failed), 2.0, slos);
      assertThat(s.completed()).isEqualTo(4);
      assertThat(s.good()).isEqualTo(2);
      assertThat(s.requestGoodput()).isEqualTo(1.0);
      assertThat(s.requestThroughput()).isEqualTo(2.0);
      assertThat(ServeStats.of(List.of(fast, failed), 1.0).good()).isEqualTo(1); // no SLO: every completed one
    }

    @Test
    void badBoundsAreRefusedPrecisely() {
      assertThatThrownBy(() -> Slos.parse("--goodput", List.of("ttft"))).hasMessage(
          "--goodput takes NAME:MILLISECONDS pairs (e.g. ttft:500 tpot:50), got 'ttft'");
      assertThatThrownBy(() -> Slos.parse("--goodput", List.of("itl:5"))).hasMessage("--goodput: unknown figure 'itl' in 'itl:5' (ttft, tpot or e2el)");
      assertThatThrownBy(() -> Slos.parse("--goodput", List.of("ttft:fast"))).hasMessage("--goodput: 'ttft:fast' needs a number of milliseconds after the colon");
      assertThatThrownBy(() -> Slos.parse("--goodput", List.of("ttft:-5"))).hasMessage("--goodput: the bound in 'ttft:-5' must be a finite number of ms > 0");
      assertThatThrownBy(() -> Slos.parse("--goodput", List.of("ttft:5", "TTFT:6"))).hasMessage("--goodput bounds ttft twice");
    }
  }

  @Nested
  class Windows {
    private static RequestResult ok(double ttft, double latency) {
      return new RequestResult(true, null, 10, 11, ttft, List.of(), latency);
    }

    @Test
    void latenciesGoToTheWindowOfTheSendAndCompletionsToTheWindowOfTheEnd() {
      List<TimedResult> requests = List.of(
          new TimedResult(0.5, 0, ok(0.1, 0.6)),   // ends 1.1, good
          new TimedResult(1.5, 0, ok(0.9, 3.0)),   // ends 4.5, TTFT over
          new TimedResult(2.5, 1, ok(0.2, 0.7)),   // ends 3.2, good
          new TimedResult(3.5, 1, RequestResult.failed(10, "x", 0.1)));
      var load = new Load.Ramp(List.of(new RatePhase(1, 2), new RatePhase(2, 2)));
      ArrivalSchedule schedule = ArrivalSchedule.ramp(load.phases(), 0);
      Slos slos = Slos.parse("--goodput", List.of("ttft:500"));
      Timeline t = Timeline.of(requests, 4.6, load, schedule, slos, 2);

      // the tail after 4 s (0.6 s, under half a window) joins the window at 2 s
      assertThat(t.windows()).extracting(Timeline.Window::startSeconds).containsExactly(0.0, 2.0);
      assertThat(t.windows().get(1).seconds()).isCloseTo(2.6, within(1e-12));
      assertThat(t.windows()).extracting(Timeline.Window::sent).containsExactly(2, 2);
      assertThat(t.windows()).extracting(Timeline.Window::completed).containsExactly(1, 2);
      assertThat(t.windows()).extracting(Timeline.Window::good).containsExactly(1, 1);
      assertThat(t.windows()).extracting(Timeline.Window::failed).containsExactly(0, 1);
      assertThat(t.windows().get(0).ttft().p50()).isCloseTo(0.5, within(1e-12));
      assertThat(t.windows().get(1).ttft().count()).isEqualTo(1); // the failed one has no TTFT
      assertThat(t.windows().get(0).offeredRate()).isEqualTo(1.0);
      assertThat(t.windows().get(1).offeredRate()).isCloseTo(2 * 2 / 2.6, within(1e-12)); // 2 req/s until 4 s, then none
      List<Timeline.Window> longer = Timeline.of(requests, 5.2, load, schedule, slos, 2).windows();
      assertThat(longer).hasSize(3); // a 1.2 s tail is a window of its own
      assertThat(longer.get(2).seconds()).isCloseTo(1.2, within(1e-12));
      assertThat(longer.get(2).ttft().p50()).isNaN();

      assertThat(t.phases()).hasSize(2);
      Timeline.Phase first = t.phases().getFirst(), second = t.phases().get(1);
      assertThat(List.of(first.sent(), first.completed(), first.good(), first.stats().good())).containsExactly(2, 1, 1, 1);
      assertThat(List.of(second.sent(), second.completed(), second.good(), second.stats().good())).containsExactly(2, 1, 1, 1);
      assertThat(first.achievedRate()).isEqualTo(0.5);
      assertThat(second.sentRate()).isEqualTo(1.0);
    }
  }

  @Nested
  class Options {
    @Test
    void aRateMakesAnOpenLoopWithoutACapAndOneWarmUpRequest() {
      var o = ServeOptions.parse("--url", "u", "--request-rate", "2.5", "--num-prompts", "20");
      assertThat(o.load()).isEqualTo(new Load.Poisson(2.5));
      assertThat(o.concurrency()).isEqualTo(ServeOptions.UNLIMITED);
      assertThat(o.warmup()).isEqualTo(1);
      assertThat(ServeOptions.parse("--url", "u", "--request-rate", "inf").load()).isEqualTo(new Load.Poisson(Double.POSITIVE_INFINITY));
      assertThat(ServeOptions.parse("--url", "u", "--request-rate", "4", "--max-concurrency", "8").concurrency()).isEqualTo(8);
      assertThat(ServeOptions.parse("--url", "u").load()).isEqualTo(new Load.ClosedLoop());
    }

    @Test
    void aRampAndGoodputBoundsAsVllmTakesThem() {
      var o = ServeOptions.parse("--url", "u", "--ramp", "2:60, 8:120,0:30", "--goodput", "ttft:500", "tpot:50", "--seed", "3",
          "--planner-metrics", "http://localhost:9700", "--window", "2.5", "--charts", "out");
      assertThat(o.load()).isEqualTo(new Load.Ramp(List.of(new RatePhase(2, 60), new RatePhase(8, 120), new RatePhase(0, 30))));
      assertThat(o.slos().millis()).isEqualTo(Map.of(Slos.Metric.TTFT, 500.0, Slos.Metric.TPOT, 50.0));
      assertThat(o.seed()).isEqualTo(3);
      assertThat(o.plannerMetrics()).isEqualTo(URI.create("http://localhost:9700"));
      assertThat(o.windowSeconds()).isEqualTo(2.5);
      assertThat(o.chartFile()).isEqualTo(java.nio.file.Path.of("out/serve.png"));
      assertThat(ServeOptions.parse("--url", "u", "--goodput=e2el:2000").slos().millis()).containsOnlyKeys(Slos.Metric.E2EL);
      assertThat(ServeOptions.parse("--url", "u").chartFile()).isNull();
    }

    @Test
    void rejectsBadRatesRampsAndCombinations() {
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--request-rate", "0")).hasMessage("--request-rate must be > 0 requests per second (or 'inf'), got 0");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--request-rate", "fast"))
          .hasMessage("--request-rate must be a number of requests per second or 'inf', got 'fast'");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--request-rate", "NaN")).hasMessageContaining("must be > 0");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--ramp", "2:60,8")).hasMessage("--ramp phase 2 ('8') must be RATE:SECONDS, e.g. 8:120");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--ramp", "2:0")).hasMessage("--ramp phase 1 ('2:0'): the duration must be finite and > 0 s");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--ramp", "x:5")).hasMessage("--ramp phase 1 ('x:5'): the rate must be a number, got 'x'");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--ramp", "-1:5")).hasMessage("--ramp phase 1 ('-1:5'): the rate must be finite and ≥ 0 requests/s");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--ramp", "0:5,0:5")).hasMessage("--ramp has no phase with a rate above 0");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--ramp", "1:5", "--request-rate", "2")).hasMessageContaining("exclude each other");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--ramp", "1:5", "--num-prompts", "9")).hasMessageContaining("drop --num-prompts");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--goodput", "ttft:500", "tpot")).hasMessageContaining("got 'tpot'");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--window", "0")).hasMessage("--window must be a number of seconds > 0, got 0.0");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--planner-metrics", "localhost:9700"))
          .hasMessage("--planner-metrics needs http(s)://HOST:PORT[/PATH] URLs, got 'localhost:9700'");
      assertThatThrownBy(() -> ServeOptions.parse("--url", "u", "--seed", "x")).hasMessage("Invalid value for option '--seed': 'x' is not a long");
    }
  }

  @Nested
  class PlannerMetrics {
    @Test
    void readsEveryReplicaSeriesAndSkipsTheRest() {
      String body = """
          # HELP moemesh_planner_replicas Replicas per stage
          # TYPE moemesh_planner_replicas gauge
          moemesh_planner_replicas{stage="decode",kind="desired"} 3.0
          moemesh_planner_replicas{kind="actual",stage="decode"} 2 1733580000000
          moemesh_planner_replicas{stage="pre\\"fill",kind="actual"} 1.0
          moemesh_planner_replicas{kind="actual"} 7
          moemesh_planner_replicas_total{stage="decode"} 9
          moemesh_planner_decisions_total 4
          """;
      assertThat(PlannerReplicas.parse(body)).containsExactly(new PlannerReplicas.Series("decode", "desired", 3),
          new PlannerReplicas.Series("decode", "actual", 2), new PlannerReplicas.Series("pre\"fill", "actual", 1));
    }
  }
}
