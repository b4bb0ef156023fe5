package io.moemesh.model;

/** A model's config.json cannot be served: names the file, the field and why. */
public final class ModelConfigException extends RuntimeException {
  public ModelConfigException(String message) {
    super(message);
  }
}
