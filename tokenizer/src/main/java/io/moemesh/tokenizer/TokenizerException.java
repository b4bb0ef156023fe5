package io.moemesh.tokenizer;

/** A tokenizer file is missing, malformed or inconsistent; the message names the file. */
public final class TokenizerException extends RuntimeException {
  public TokenizerException(String message) {
    super(message);
  }

  public TokenizerException(String message, Throwable cause) {
    super(message, cause);
  }
}
