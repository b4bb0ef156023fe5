package io.moemesh.tokenizer;

/**
 * A token of {@code tokenizer.json}'s {@code added_tokens}: matched in text before pre-tokenization, so it always
 * encodes as the single id {@code id}. {@code special} tokens are dropped when decoding with
 * {@code skipSpecialTokens}.
 */
public record AddedToken(int id, String content, boolean special) {}
