package io.moemesh.enginehost;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.moemesh.proto.drain.DrainMarker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class DrainTest {

  @Test
  void aDrainRefusesNewWorkWithTheDrainMarker() {
    Drain drain = new Drain();
    drain.refuseIfDraining("requests"); // serving: no refusal
    assertThat(drain.drain(Duration.ofMinutes(1))).isEqualTo(new Drain.Result(0, 0)); // nothing in flight: at once
    assertThat(drain.draining()).isTrue();
    Throwable refused = catchThrowable(() -> drain.refuseIfDraining("requests"));
    assertThat(DrainMarker.isDrain(refused)).as(String.valueOf(refused)).isTrue();
  }

  @Test
  void callsThatEndWithinTheTimeoutFinish() throws Exception {
    Drain drain = new Drain();
    List<String> cut = new ArrayList<>();
    Drain.Call a = drain.track(() -> cut.add("a")), b = drain.track(() -> cut.add("b"));
    CompletableFuture<Drain.Result> result = CompletableFuture.supplyAsync(() -> drain.drain(Duration.ofMinutes(5)));
    while (!drain.draining()) Thread.onSpinWait();
    assertThat(result).isNotDone(); // waits for the calls
    a.close();
    b.close();
    b.close(); // idempotent
    assertThat(result.get(1, TimeUnit.MINUTES)).isEqualTo(new Drain.Result(2, 0));
    assertThat(cut).isEmpty();
  }

  @Test
  void callsStillRunningAtTheTimeoutAreCutOffOnce() {
    Drain drain = new Drain();
    List<String> cut = new ArrayList<>();
    Drain.Call[] calls = new Drain.Call[2];
    calls[0] = drain.track(() -> {
      cut.add("a");
      calls[0].close(); // as a service's cut-off does: failing the call ends it
    });
    calls[1] = drain.track(() -> {
      cut.add("b");
      calls[1].close();
    });
    assertThat(drain.drain(Duration.ZERO)).isEqualTo(new Drain.Result(0, 2));
    assertThat(cut).containsExactly("a", "b");
    assertThat(drain.inFlight()).isZero();
    assertThat(drain.drain(Duration.ZERO)).as("a second drain finds nothing").isEqualTo(new Drain.Result(0, 0));
    assertThat(cut).hasSize(2);
  }
}
