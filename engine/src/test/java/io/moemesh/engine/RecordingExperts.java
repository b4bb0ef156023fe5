package io.moemesh.engine;

import io.moemesh.kernels.Kernels;
import io.moemesh.kernels.Tensor;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.moe.ExpertBackend;
import io.moemesh.model.moe.Routing;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Consumer;

/**
 * Another backend's experts, logging each {@code start} and {@code finish} (layer, rows) on a log that others (a
 * transport) may write to as well: the order in which a forward pass starts and finishes its experts' work.
 */
final class RecordingExperts implements ExpertBackend {
  record Event(String kind, int layerId, long rows) {}

  /** One forward pass seen in the log: its rows, and whether one micro-batch's experts started while another's were at work. */
  record Pass(long rows, boolean overlapped) {}

  private final ExpertBackend inner;
  final List<Event> log = Collections.synchronizedList(new ArrayList<>());
  /** Told each start once the inner backend has started it (on the step thread). */
  volatile Consumer<Event> afterStart = e -> {};

  RecordingExperts(ExpertBackend inner) {
    this.inner = inner;
  }

  @Override
  public void routed(Kernels k, int layerId, Tensor out, Tensor x, Routing routing, TensorArena scratch) {
    inner.routed(k, layerId, out, x, routing, scratch);
  }

  @Override
  public void shared(Kernels k, int layerId, Tensor out, Tensor x, TensorArena scratch) {
    inner.shared(k, layerId, out, x, scratch);
  }

  @Override
  public Pending start(Kernels k, int layerId, Tensor routedOut, Tensor sharedOut, Tensor x, Routing routing, TensorArena scratch) {
    var started = new Event("start", layerId, x.numRows());
    log.add(started);
    Pending pending = inner.start(k, layerId, routedOut, sharedOut, x, routing, scratch);
    afterStart.accept(started);
    return () -> {
      log.add(new Event("finish", layerId, x.numRows()));
      pending.finish();
    };
  }

  /** The passes in the log: a pass begins with a start of {@code firstMoeLayer} while no work is in flight. */
  List<Pass> passes(int firstMoeLayer) {
    List<Pass> passes = new ArrayList<>();
    long rows = 0;
    boolean overlapped = false;
    int inFlight = 0;
    synchronized (log) {
      for (Event e : log) {
        if (e.kind().equals("finish")) inFlight--;
        if (!e.kind().equals("start")) continue;
        if (e.layerId() == firstMoeLayer && inFlight == 0) {
          if (rows > 0) passes.add(new Pass(rows, overlapped));
          rows = 0;
          overlapped = false;
        }
        if (e.layerId() == firstMoeLayer) rows += e.rows();
        overlapped |= inFlight > 0;
        inFlight++;
      }
    }
    if (rows > 0) passes.add(new Pass(rows, overlapped));
    return passes;
  }
}
