package io.moemesh.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The token strings of a {@code tokenizer.json}: the model's vocabulary plus the added tokens, by id.
 *
 * @param idToToken (size) the token of each id; null for an id no token uses
 * @param tokenToId the inverse map
 * @param addedTokens the {@code added_tokens}, in file order
 * @param special (size) whether each id is a special added token
 * @param tokenBytes (size) each token's decoded bytes if the decoder is {@code ByteLevel}, else null
 */
record Vocabulary(
    String[] idToToken,
    Map<String, Integer> tokenToId,
    List<AddedToken> addedTokens,
    boolean[] special,
    byte[][] tokenBytes) {

  private static final int MAX_SIZE = 1 << 24;

  int size() {
    return idToToken.length;
  }

  static Vocabulary parse(JsonNode root, Path file) {
    Map<String, Integer> tokenToId = new HashMap<>();
    JsonNode vocab = root.path("model").get("vocab");
    if (vocab == null || !(vocab.isObject() || vocab.isArray())) {
      throw new TokenizerException(file + ": model.vocab is missing");
    }
    if (vocab.isObject()) {
      vocab.properties().forEach(e -> tokenToId.put(e.getKey(), e.getValue().asInt()));
    } else { // Unigram: [[token, score], ...], id = position
      for (int i = 0; i < vocab.size(); i++) tokenToId.put(vocab.get(i).path(0).asText(), i);
    }
    List<AddedToken> added = new ArrayList<>();
    for (JsonNode t : root.path("added_tokens")) {
      added.add(new AddedToken(t.path("id").asInt(), t.path("content").asText(), t.path("special").asBoolean()));
    }
    for (AddedToken t : added) tokenToId.put(t.content(), t.id());
    int size = 0;
    for (int id : tokenToId.values()) {
      if (id < 0 || id >= MAX_SIZE) throw new TokenizerException(file + ": token id " + id + " out of range");
      size = Math.max(size, id + 1);
    }
    String[] idToToken = new String[size];
    tokenToId.forEach((token, id) -> idToToken[id] = token);
    boolean[] special = new boolean[size];
    for (AddedToken t : added) special[t.id()] = t.special();
    byte[][] tokenBytes = null;
    if ("ByteLevel".equals(root.path("decoder").path("type").asText())) {
      tokenBytes = new byte[size][];
      for (int id = 0; id < size; id++) {
        tokenBytes[id] = idToToken[id] == null ? new byte[0] : ByteLevel.decode(idToToken[id]);
      }
    }
    return new Vocabulary(idToToken, tokenToId, List.copyOf(added), special, tokenBytes);
  }
}
