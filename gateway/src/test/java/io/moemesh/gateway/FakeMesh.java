package io.moemesh.gateway;

import com.google.protobuf.Message;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Status;
import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.common.v1.SampledToken;
import io.moemesh.proto.common.v1.TokenLogprob;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What the fake prefill and decode services do and what they saw. A test registers a {@link Script} under the
 * request id it sends as {@code X-Request-Id}; the fakes find it through the {@code x-request-id} metadata, so a
 * script only runs if the gateway propagated the id. Every call is recorded, with whether it was cancelled.
 */
final class FakeMesh {
  static final Context.Key<String> REQUEST_ID = Context.key("x-request-id");
  static final Context.Key<String> TRACE_PARENT = Context.key("traceparent");
  static final Context.Key<String> AUTHORITY = Context.key("authority");
  static final Script DEFAULT = Script.says("Hello from the fake mesh.");

  private static final Map<String, Script> SCRIPTS = new ConcurrentHashMap<>();
  private static final ConcurrentLinkedQueue<Call> CALLS = new ConcurrentLinkedQueue<>();
  static volatile boolean loadUnavailable;
  static volatile boolean prefillLoadUnavailable;
  /** The KV cache usage the fake decode replica reports in Load. */
  static volatile double decodeKvUsage = 0.1;

  private FakeMesh() {}

  /**
   * How a request goes. The fakes emit {@code text}'s tokens one per message (then EOS when {@code finish} is
   * STOP), honour max_tokens with LENGTH, and stop early as the other fields say.
   *
   * @param errorAfter after this many tokens decode ends with FINISH_REASON_ERROR; -1 = never
   * @param hang decode sends its tokens but never finishes (until cancelled); prefill never answers if
   *     {@code hangPrefill}
   * @param decodeGate decode waits for it before sending anything
   * @param decodeStatus decode fails the call with this status at once; null = no
   * @param unavailableDecodes the first this many decode calls of the request fail with UNAVAILABLE
   */
  record Script(String text, FinishReason finish, int errorAfter, boolean hang, boolean hangPrefill,
      CompletableFuture<Void> decodeGate, Status decodeStatus, int cachedTokens, int unavailableDecodes) {
    static Script says(String text) {
      return new Script(text, FinishReason.FINISH_REASON_STOP, -1, false, false,
          CompletableFuture.completedFuture(null), null, 0, 0);
    }

    Script unavailableFor(int decodeCalls) {
      return new Script(text, finish, errorAfter, hang, hangPrefill, decodeGate, decodeStatus, cachedTokens,
          decodeCalls);
    }

    Script errorAfter(int n) {
      return new Script(text, finish, n, hang, hangPrefill, decodeGate, decodeStatus, cachedTokens,
          unavailableDecodes);
    }

    Script hanging() {
      return new Script(text, finish, errorAfter, true, hangPrefill, decodeGate, decodeStatus, cachedTokens,
          unavailableDecodes);
    }

    Script hangingInPrefill() {
      return new Script(text, finish, errorAfter, hang, true, decodeGate, decodeStatus, cachedTokens,
          unavailableDecodes);
    }

    Script gated(CompletableFuture<Void> gate) {
      return new Script(text, finish, errorAfter, hang, hangPrefill, gate, decodeStatus, cachedTokens,
          unavailableDecodes);
    }

    Script failing(Status status) {
      return new Script(text, finish, errorAfter, hang, hangPrefill, decodeGate, status, cachedTokens,
          unavailableDecodes);
    }

    Script cached(int tokens) {
      return new Script(text, finish, errorAfter, hang, hangPrefill, decodeGate, decodeStatus, tokens,
          unavailableDecodes);
    }
  }

  /** One RPC the fakes served; {@code deadline} is the one the caller set (null: none); {@code authority} the replica address it was sent to. */
  record Call(String service, String metadataRequestId, Message request, AtomicBoolean cancelled,
      AtomicBoolean decodeStarted, Deadline deadline, String traceParent, String authority) {}

  static void script(String requestId, Script script) {
    SCRIPTS.put(requestId, script);
  }

  static Script scriptFor(String requestId) {
    return requestId == null ? DEFAULT : SCRIPTS.getOrDefault(requestId, DEFAULT);
  }

  static Call record(String service, Message request) {
    Call call = new Call(service, REQUEST_ID.get(), request, new AtomicBoolean(), new AtomicBoolean(),
        Context.current().getDeadline(), TRACE_PARENT.get(), AUTHORITY.get());
    CALLS.add(call);
    return call;
  }

  /** The calls made for a request id (metadata), in arrival order. */
  static List<Call> calls(String requestId) {
    return CALLS.stream().filter(c -> requestId.equals(c.metadataRequestId())).toList();
  }

  static List<Call> calls(String requestId, String service) {
    return calls(requestId).stream().filter(c -> c.service().equals(service)).toList();
  }

  /** The fake's logprob of the token at position {@code i} and of its {@code j}-th alternative. */
  static double logprob(int i, int j) {
    return -0.25 * (i + 1) - j;
  }

  /** The token at position {@code i} of {@code ids}, with {@code k} top logprobs if asked (k = null: none). */
  static SampledToken token(int[] ids, int i, Integer k, int vocab) {
    SampledToken.Builder t = SampledToken.newBuilder().setTokenId(ids[i]);
    if (k != null) {
      t.setLogprob(logprob(i, 0));
      for (int j = 0; j < k; j++) {
        int id = j == 0 ? ids[i] : (ids[i] + j) % vocab;
        t.addTopLogprobs(TokenLogprob.newBuilder().setTokenId(id).setLogprob(logprob(i, j)));
      }
    }
    return t.build();
  }
}
