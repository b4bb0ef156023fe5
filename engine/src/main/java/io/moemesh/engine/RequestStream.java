package io.moemesh.engine;

import io.moemesh.model.sampling.SampledToken;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** One request's outputs as a blocking stream, for callers that want to wait (the CLI, tests, benchmarks). */
public final class RequestStream implements Engine.OutputListener {
  private final String requestId;
  private final LinkedBlockingQueue<RequestOutput> outputs = new LinkedBlockingQueue<>();

  RequestStream(String requestId) {
    this.requestId = requestId;
  }

  public String requestId() {
    return requestId;
  }

  @Override
  public void onOutput(RequestOutput output) {
    outputs.add(output);
  }

  /** The next output, waiting at most {@code timeout}. */
  public RequestOutput next(Duration timeout) throws InterruptedException, TimeoutException {
    RequestOutput out = outputs.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
    if (out == null) throw new TimeoutException("request " + requestId + ": no output within " + timeout);
    return out;
  }

  /** The whole request: every token and how it finished (and the prefill role's {@link RequestOutput#drafts}). */
  public record Completion(String requestId, List<SampledToken> tokens, RequestStatus status, Usage usage, String error, List<Integer> drafts) {
    public int[] tokenIds() {
      return tokens.stream().mapToInt(SampledToken::tokenId).toArray();
    }
  }

  /** Waits until the request finishes, at most {@code timeout} in all. */
  public Completion await(Duration timeout) throws InterruptedException, TimeoutException {
    long deadline = System.nanoTime() + timeout.toNanos();
    List<SampledToken> tokens = new ArrayList<>();
    while (true) {
      RequestOutput out = next(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
      tokens.addAll(out.newTokens());
      if (out.finished()) return new Completion(requestId, tokens, out.status(), out.usage(), out.error(), out.drafts());
    }
  }
}
