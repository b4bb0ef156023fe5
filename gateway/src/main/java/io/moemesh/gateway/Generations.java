package io.moemesh.gateway;

import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.subscription.Cancellable;
import jakarta.inject.Singleton;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/** Runs all choices of a prepared request on the mesh and merges their events; cancelling cancels every call. */
@Singleton
public class Generations {
  private final Orchestrator orchestrator;
  private final ServedModel model;

  Generations(Orchestrator orchestrator, ServedModel model) {
    this.orchestrator = orchestrator;
    this.model = model;
  }

  /** @param queued each choice's place in the prompt queue, left with its first token (or its end) */
  Multi<ChoiceEvent> run(PreparedRequest prepared, RequestIds.Ids ids, PromptQueue.Entry[] queued, GenerationSpan span) {
    GenerationRequest r = prepared.request();
    int choices = prepared.numChoices();
    List<Multi<ChoiceEvent>> streams = new ArrayList<>(choices);
    for (int i = 0; i < choices; i++) {
      int index = i;
      BackendCall call = new BackendCall(ids.correlationId(), choices == 1 ? ids.meshId() : ids.meshId() + "-" + i, span.calls(),
          prepared.promptOf(i), ProtoMapping.sampling(r.sampling(), i), prepared.maxTokensOf(i), span.migrations());
      streams.add(Multi.createFrom().deferred(() -> {
        var decoder = new ChoiceDecoder(index, model.tokenizer(), r.stop(), r.topLogprobs() != null);
        PromptQueue.Entry entry = queued[index];
        return untilFinished(orchestrator.generate(call).onItem().invoke(entry::computed)
            .onTermination().invoke(entry::dropped).onItem().transform(decoder::accept));
      }));
    }
    return choices == 1 ? streams.getFirst() : Multi.createBy().merging().withConcurrency(choices).streams(streams);
  }

  /**
   * Passes events up to and including the finished one. A stop string ends the choice while the backend would keep
   * generating, so its call is cancelled at once; a natural finish lets the call close by itself (cancelling it
   * would race the trailers). A stream that ends unfinished is a backend error.
   */
  static Multi<ChoiceEvent> untilFinished(Multi<ChoiceEvent> events) {
    return Multi.createFrom().emitter(emitter -> {
      AtomicReference<Cancellable> upstream = new AtomicReference<>();
      AtomicBoolean done = new AtomicBoolean();
      AtomicBoolean finished = new AtomicBoolean();
      Cancellable subscription = events.subscribe().with(event -> {
        if (done.get() || finished.get()) return;
        emitter.emit(event);
        if (!event.finished()) return;
        finished.set(true);
        if (event.stoppedEarly() && done.compareAndSet(false, true)) {
          Cancellable c = upstream.get();
          if (c != null) c.cancel();
          emitter.complete();
        }
      }, failure -> {
        if (done.compareAndSet(false, true)) emitter.fail(failure);
      }, () -> {
        if (!done.compareAndSet(false, true)) return;
        if (finished.get()) emitter.complete();
        else emitter.fail(new BackendException("the backend stream ended without a finish reason"));
      });
      upstream.set(subscription);
      if (done.get()) subscription.cancel();
      emitter.onTermination(() -> {
        if (done.compareAndSet(false, true)) subscription.cancel(); // the client left: cancel the calls
      });
    });
  }
}
