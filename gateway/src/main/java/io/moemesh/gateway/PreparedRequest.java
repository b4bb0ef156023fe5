package io.moemesh.gateway;

import java.util.List;

/**
 * A request ready for the mesh: each prompt's token ids and its completion budget (checked against the context).
 * Choice {@code i} runs prompt {@code i / n}; its index in the response is {@code i}.
 */
record PreparedRequest(GenerationRequest request, List<int[]> promptIds, List<Integer> maxTokens) {

  int numChoices() {
    return promptIds.size() * request.n();
  }

  int[] promptOf(int choice) {
    return promptIds.get(choice / request.n());
  }

  int maxTokensOf(int choice) {
    return maxTokens.get(choice / request.n());
  }

  /** Each choice's prompt length: the work the mesh does before the choice's first token. */
  int[] promptTokensPerChoice() {
    int[] out = new int[numChoices()];
    for (int i = 0; i < out.length; i++) out[i] = promptOf(i).length;
    return out;
  }

  /** Prompt tokens as usage counts them: each prompt once, however many choices share it (as OpenAI does). */
  int promptTokens() {
    int sum = 0;
    for (int[] p : promptIds) sum += p.length;
    return sum;
  }
}
