package io.moemesh.gateway;

import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.proto.common.v1.SampledToken;
import io.moemesh.proto.common.v1.Usage;
import java.util.List;

/**
 * Tokens from the mesh for one choice: the prefill's first token, or one Generate message.
 *
 * @param finish {@code FINISH_REASON_UNSPECIFIED} while running
 * @param usage null when the message carries none
 */
record BackendChunk(List<SampledToken> tokens, FinishReason finish, Usage usage) {
  boolean finished() {
    return finish != FinishReason.FINISH_REASON_UNSPECIFIED;
  }

  BackendChunk withFinish(FinishReason reason) {
    return new BackendChunk(tokens, reason, usage);
  }
}
