package io.moemesh.enginehost;

import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.util.Map;

/**
 * A configuration mapping read from given properties instead of the service's configuration, with the same
 * converters and checks: for an engine brought up outside a service (a reference engine in a test, a tool).
 */
public final class ConfigMappings {
  private ConfigMappings() {}

  /** {@code mapping} (e.g. {@link EngineConfig}) over {@code properties} (full keys, e.g. {@code moemesh.engine.model-dir}). */
  public static <T> T read(Class<T> mapping, Map<String, String> properties) {
    return new SmallRyeConfigBuilder().addDiscoveredConverters().withMapping(mapping)
        .withSources(new PropertiesConfigSource(properties, "given properties", 100)).build().getConfigMapping(mapping);
  }

  /** The engine's settings from {@code moemesh.engine.*} properties. */
  public static io.moemesh.engine.EngineSettings engine(Map<String, String> properties) {
    return read(EngineConfig.class, properties).settings();
  }
}
