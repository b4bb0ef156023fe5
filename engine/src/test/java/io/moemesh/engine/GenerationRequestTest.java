package io.moemesh.engine;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moemesh.model.sampling.SampledToken;
import io.moemesh.model.sampling.SamplingParams;
import org.junit.jupiter.api.Test;

/** What a request's handoff allows, refused with the reason. */
class GenerationRequestTest {
  static final int[] PROMPT = {5, 6, 7, 8};

  @Test
  void aPrefillRequestGeneratesOneTokenAndComputesAtLeastTheLastPosition() {
    assertThatThrownBy(() -> new GenerationRequest("p", PROMPT, SamplingParams.greedy(), 2, 0, KvHandoff.Export.FULL))
        .hasMessage("request p: a prefill (KV export) request generates exactly its first token, not 2");
    assertThatThrownBy(() -> new GenerationRequest("p", PROMPT, SamplingParams.greedy(), 1, 0, new KvHandoff.Export(4)))
        .hasMessage("request p: a stored prefix of 4 tokens leaves nothing of the 4-token prompt to compute (the first token needs the last position's logits)");
    assertThatThrownBy(() -> new KvHandoff.Export(-1)).hasMessage("prefixTokens must be ≥ 0, got -1");
  }

  @Test
  void aDecodeRequestNeedsRoomBeyondTheFirstToken() {
    var imported = new KvHandoff.Import(new SampledToken(9, java.util.Optional.empty()), 0, KvHandoff.OnLoadFailure.FAIL);
    assertThatThrownBy(() -> new GenerationRequest("d", PROMPT, SamplingParams.greedy(), 1, 0, imported))
        .hasMessage("request d: a decode (KV import) request needs max_tokens ≥ 2 (the first token is the prefill's)");
  }
}
