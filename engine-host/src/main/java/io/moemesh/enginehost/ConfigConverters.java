package io.moemesh.enginehost;

import java.util.Locale;
import org.eclipse.microprofile.config.spi.Converter;

/**
 * Value checks for the engines' configuration mappings. A converter that throws makes SmallRye fail startup with
 * the key and its value in the message, so a bad number is reported where it was set rather than deep in the engine.
 */
public final class ConfigConverters {
  private ConfigConverters() {}

  /** {@code true} or {@code false} only: SmallRye's own reads every other word as false. */
  public static final class StrictBoolean implements Converter<Boolean> {
    @Override
    public Boolean convert(String value) {
      return switch (value.trim().toLowerCase(Locale.ROOT)) {
        case "true" -> true;
        case "false" -> false;
        default -> throw new IllegalArgumentException("expected true or false, got '" + value + "'");
      };
    }
  }

  /** An integer ≥ 1. */
  public static final class Positive implements Converter<Integer> {
    @Override
    public Integer convert(String value) {
      int n = Integer.parseInt(value.trim());
      if (n < 1) throw new IllegalArgumentException("must be ≥ 1, got " + n);
      return n;
    }
  }

  /** An integer ≥ 0 (0 = off). */
  public static final class NonNegative implements Converter<Integer> {
    @Override
    public Integer convert(String value) {
      int n = Integer.parseInt(value.trim());
      if (n < 0) throw new IllegalArgumentException("must be ≥ 0 (0 = off), got " + n);
      return n;
    }
  }
}
