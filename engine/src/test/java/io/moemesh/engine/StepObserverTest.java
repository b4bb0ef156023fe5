package io.moemesh.engine;

import static io.moemesh.engine.SchedulerFixture.budget;
import static io.moemesh.engine.SchedulerFixture.request;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The engine tells its step observer (engine-host: the step's trace span) about every step, around the runner only. */
class StepObserverTest {

  @Test
  void eachStepIsBegunBeforeTheRunnerAndClosedAfterItAndAStepThatThrowsSaysWhy() {
    var f = new SchedulerFixture(budget(64), 50, 4);
    List<String> events = new ArrayList<>();
    f.core.observeSteps(plan -> {
      int runBefore = f.runner.plans.size();
      events.add("begin " + plan.chunks().stream().map(ScheduledChunk::requestId).sorted().toList());
      return new StepObserver.Step() {
        @Override
        public void failed(RuntimeException failure) {
          events.add("failed " + failure.getMessage());
        }

        @Override
        public void close() {
          assertThat(f.runner.plans).as("the runner ran the plan once in between").hasSize(runBefore + 1).last().isSameAs(plan);
          events.add("close");
        }
      };
    });
    f.runner.throwFor.add("bad");
    f.add(request("good", 5, 2), request("bad", 5, 2));
    f.step();
    // the batch threw: observed once (begin, failed, close), then its requests ran one by one outside the step
    assertThat(events).containsExactly("begin [bad, good]", "failed boom in bad", "close");
    assertThat(f.runner.plans).hasSize(3);
    f.runToCompletion();
    assertThat(events.subList(3, events.size())).containsExactly("begin [good]", "close");
  }
}
