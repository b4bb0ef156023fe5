package io.moemesh.gateway;

import io.moemesh.proto.common.v1.FinishReason;
import io.moemesh.tokenizer.Tokenizer;
import java.util.Arrays;

/** The token ids a script's text stands for, with the tiny model's tokenizer. */
final class FakeTokens {
  private FakeTokens() {}

  static int[] of(Tokenizer tokenizer, FakeMesh.Script script) {
    int[] ids = tokenizer.encode(script.text());
    if (script.finish() != FinishReason.FINISH_REASON_STOP) return ids;
    int[] withEos = Arrays.copyOf(ids, ids.length + 1);
    withEos[ids.length] = TestModel.EOS;
    return withEos;
  }
}
