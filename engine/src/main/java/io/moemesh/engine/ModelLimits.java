package io.moemesh.engine;

import io.moemesh.model.ModelConfig;

/**
 * What the scheduler needs to know of the model: the vocabulary (to validate prompts), the context length
 * and the EOS ids.
 */
public record ModelLimits(int vocabSize, int maxModelLen, int[] eosTokenIds) {

  public static ModelLimits of(ModelConfig c) {
    return new ModelLimits(c.vocabSize(), c.maxPositionEmbeddings(), c.eosTokenIds().clone());
  }

  boolean isEos(int tokenId) {
    for (int id : eosTokenIds) if (id == tokenId) return true;
    return false;
  }
}
