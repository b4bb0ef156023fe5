package io.moemesh.tokenizer;

/**
 * A chat template could not be rendered: it called {@code raise_exception(message)} (then {@link #getMessage()} is
 * exactly that message, e.g. a template rejecting an unsupported role order), or it has a syntax or evaluation error.
 */
public final class ChatTemplateException extends RuntimeException {
  private final boolean raisedByTemplate;

  public ChatTemplateException(String message, boolean raisedByTemplate) {
    super(message);
    this.raisedByTemplate = raisedByTemplate;
  }

  /** True when the template itself rejected the conversation through {@code raise_exception}. */
  public boolean raisedByTemplate() {
    return raisedByTemplate;
  }
}
