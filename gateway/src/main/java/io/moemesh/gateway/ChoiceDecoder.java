package io.moemesh.gateway;

import io.moemesh.proto.common.v1.SampledToken;
import io.moemesh.proto.common.v1.TokenLogprob;
import io.moemesh.tokenizer.IncrementalDetokenizer;
import io.moemesh.tokenizer.Tokenizer;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns one choice's token stream into OpenAI text: incremental detokenization (never broken UTF-8, special tokens
 * such as EOS skipped), stop strings, logprobs and the finish reason. Not thread-safe: one per choice.
 */
final class ChoiceDecoder {
  private final int index;
  private final Tokenizer tokenizer;
  private final IncrementalDetokenizer detokenizer;
  private final StopMatcher stops;
  private final boolean logprobs;
  private boolean finished;

  ChoiceDecoder(int index, Tokenizer tokenizer, List<String> stopStrings, boolean logprobs) {
    this.index = index;
    this.tokenizer = tokenizer;
    this.detokenizer = tokenizer.newDetokenizer(true);
    this.stops = new StopMatcher(stopStrings);
    this.logprobs = logprobs;
  }

  ChoiceEvent accept(BackendChunk chunk) {
    if (finished) throw new IllegalStateException("choice " + index + " already finished");
    StringBuilder text = new StringBuilder();
    List<ChoiceEvent.TokenLogprob> lps = new ArrayList<>();
    int numTokens = 0;
    for (SampledToken t : chunk.tokens()) {
      if (stops.stopped()) break; // tokens after the stop string are dropped, as the call is cancelled
      numTokens++;
      text.append(stops.push(detokenizer.add(t.getTokenId())));
      if (logprobs) lps.add(logprobOf(t));
    }
    String finish = null;
    if (stops.stopped()) {
      finish = "stop";
    } else if (chunk.finished()) {
      text.append(stops.push(detokenizer.finish()));
      text.append(stops.flush());
      finish = stops.stopped() ? "stop" : finishReason(chunk);
    }
    finished = finish != null;
    int cached = chunk.usage() == null ? 0 : chunk.usage().getCachedPromptTokens();
    boolean early = stops.stopped() && !chunk.finished();
    return new ChoiceEvent(index, text.toString(), List.copyOf(lps), finish, numTokens, cached, early);
  }

  private static String finishReason(BackendChunk chunk) {
    return switch (chunk.finish()) {
      case FINISH_REASON_STOP -> "stop";
      case FINISH_REASON_LENGTH -> "length";
      default -> throw new BackendException("the backend ended the request with " + chunk.finish());
    };
  }

  private ChoiceEvent.TokenLogprob logprobOf(SampledToken t) {
    List<ChoiceEvent.TopLogprob> top = new ArrayList<>(t.getTopLogprobsCount());
    for (TokenLogprob alt : t.getTopLogprobsList()) {
      top.add(new ChoiceEvent.TopLogprob(tokenText(alt.getTokenId()), alt.getLogprob()));
    }
    double logprob = t.hasLogprob() ? t.getLogprob() : Double.NaN;
    return new ChoiceEvent.TokenLogprob(tokenText(t.getTokenId()), logprob, List.copyOf(top));
  }

  /** A token's own text (a byte-level piece of a character decodes to U+FFFD, as in vLLM). */
  private String tokenText(int id) {
    return id >= 0 && id < tokenizer.vocabSize() ? tokenizer.decode(new int[] {id}, false) : "<invalid " + id + ">";
  }
}
