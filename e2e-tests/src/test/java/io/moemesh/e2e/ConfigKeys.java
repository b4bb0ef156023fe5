package io.moemesh.e2e;

import io.smallrye.config.WithName;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The configuration keys a service reads, found in its code rather than listed: its {@code @ConfigMapping} interfaces
 * (walked by reflection, the engines' {@code EngineConfig} and {@code ExpertsConfig} among them), the keys its
 * sources read ({@code @ConfigProperty}, {@code getOptionalValue}, system-property constants), the keys its
 * {@code application.properties} sets, and the
 * OpenTelemetry variables that the telemetry module maps. A service is its module and the project modules it
 * depends on.
 */
final class ConfigKeys {
  private static final Path ROOT = K8sManifests.ROOT;
  /** A key named where configuration is read: {@code @ConfigProperty(name = …)}, {@code getOptionalValue(…)}, a {@code PROPERTY} constant. */
  private static final Pattern KEY_LITERAL =
      Pattern.compile("(?:name = |getOptionalValue\\(|getValue\\(|PROPERTY = )\"(moemesh(?:\\.[a-z0-9-]+)+)\"");
  private static final Pattern MAPPING = Pattern.compile("@ConfigMapping\\(prefix = \"([a-z0-9.-]+)\"\\)");
  private static final Pattern OTEL_REFERENCE = Pattern.compile("\\$\\{(otel(?:\\.[a-z0-9_-]+)+):");

  private ConfigKeys() {}

  /** {@code moemesh.engine.kv-cache-memory} → {@code MOEMESH_ENGINE_KV_CACHE_MEMORY}, as SmallRye maps environment variables. */
  static String envName(String key) {
    return key.replaceAll("[^A-Za-z0-9]", "_").toUpperCase(Locale.ROOT);
  }

  /** The keys the service built from {@code module} reads. */
  static Set<String> of(String module) throws Exception {
    Set<String> keys = new LinkedHashSet<>();
    Set<String> modules = withDependencies(module, new LinkedHashSet<>());
    // the services are not on this module's classpath (it starts them as processes): their built classes are read here
    List<URL> classes = new ArrayList<>();
    for (String m : modules) classes.add(ROOT.resolve(m).resolve("target/classes").toUri().toURL());
    ClassLoader loader = new URLClassLoader(classes.toArray(URL[]::new), ConfigKeys.class.getClassLoader());
    for (String m : modules) {
      Path sources = ROOT.resolve(m).resolve("src/main/java");
      if (Files.isDirectory(sources)) {
        try (Stream<Path> files = Files.walk(sources)) {
          for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
            String code = Files.readString(f);
            Matcher literal = KEY_LITERAL.matcher(code);
            while (literal.find()) keys.add(literal.group(1));
            Matcher mapping = MAPPING.matcher(code);
            if (mapping.find()) {
              String type = sources.relativize(f).toString().replace('/', '.').replaceFirst("\\.java$", "");
              walk(mapping.group(1), Class.forName(type, false, loader), keys);
            }
          }
        }
      }
      for (Path resources : new Path[] {ROOT.resolve(m).resolve("src/main/resources/application.properties"),
          ROOT.resolve(m).resolve("src/main/resources/META-INF/microprofile-config.properties")}) {
        if (!Files.exists(resources)) continue;
        var props = new Properties();
        try (InputStream in = Files.newInputStream(resources)) {
          props.load(in);
        }
        for (String k : props.stringPropertyNames()) if (!k.startsWith("%")) keys.add(k);
        Matcher otel = OTEL_REFERENCE.matcher(Files.readString(resources));
        while (otel.find()) keys.add(otel.group(1));
      }
    }
    return keys;
  }

  /** A mapping interface's keys: a method per key (kebab-case, or its {@code @WithName}), an interface return type a group. */
  private static void walk(String prefix, Class<?> mapping, Set<String> keys) {
    for (Method m : mapping.getMethods()) {
      if (Modifier.isStatic(m.getModifiers()) || m.getParameterCount() > 0 || m.isDefault()) continue;
      WithName named = m.getAnnotation(WithName.class);
      String key = prefix + "." + (named != null ? named.value() : m.getName().replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT));
      Class<?> group = group(m.getGenericReturnType());
      if (group != null) walk(key, group, keys);
      else keys.add(key);
    }
  }

  /** The group interface a method returns (directly or in an Optional), or null for a value. */
  private static Class<?> group(Type type) {
    if (type instanceof ParameterizedType p && p.getRawType() == Optional.class) type = p.getActualTypeArguments()[0];
    return type instanceof Class<?> c && c.isInterface() && c.getName().startsWith("io.moemesh.") ? c : null;
  }

  /** {@code module} and the project modules its pom depends on, transitively. */
  private static Set<String> withDependencies(String module, Set<String> into) throws IOException {
    if (!into.add(module)) return into;
    Matcher dependency = Pattern.compile("<artifactId>([a-z0-9-]+)</artifactId>").matcher(Files.readString(ROOT.resolve(module).resolve("pom.xml")));
    while (dependency.find()) {
      String d = dependency.group(1);
      if (!d.equals(module) && Files.isRegularFile(ROOT.resolve(d).resolve("pom.xml"))) withDependencies(d, into);
    }
    return into;
  }
}
