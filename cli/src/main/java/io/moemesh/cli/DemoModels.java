package io.moemesh.cli;

import io.moemesh.model.LoadProgress;
import io.moemesh.model.demo.DemoCheckpoint;
import io.moemesh.tokenizer.TokenizerFiles;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The demo models: {@code demo}, the trained miniature DeepSeek-V3 in the repository ({@code models/demo}, made by
 * {@code tools/train-demo}); and the seeded random checkpoints of the shipped configs ({@code tiny}, {@code small},
 * {@code bench}), cached in {@code $MOEMESH_HOME/models/<name>} (default {@code ~/.cache/moemesh}). A random checkpoint
 * is written to a temporary folder and renamed when complete, so an interrupted run never leaves half a model.
 */
public final class DemoModels {
  /** The trained demo model: the default of {@code up}, {@code generate} and {@code bench quality}. */
  public static final String DEFAULT = "demo";
  /** Where the repository is, for {@link #DEFAULT}: set by {@code bin/moemesh}. */
  static final String ROOT_PROPERTY = "moemesh.root";
  static final long DEFAULT_SEED = 0;

  private DemoModels() {}

  static Path home() {
    String env = System.getenv("MOEMESH_HOME");
    return env != null && !env.isBlank() ? Path.of(env) : Path.of(System.getProperty("user.home"), ".cache", "moemesh");
  }

  /** A config file: a path, or the name of a shipped config (copied out of the jar). */
  static Path config(String pathOrName) throws IOException {
    Path path = Path.of(pathOrName);
    if (Files.isRegularFile(path)) return path;
    String resource = "/io/moemesh/model/configs/" + pathOrName + ".json";
    try (InputStream in = DemoCheckpoint.class.getResourceAsStream(resource)) {
      if (in == null) throw new UsageException("no config file '" + pathOrName + "' and no shipped config of that name (tiny, small, bench)");
      Path copy = Files.createTempFile("moemesh-config-", ".json");
      Files.copy(in, copy, StandardCopyOption.REPLACE_EXISTING);
      copy.toFile().deleteOnExit();
      return copy;
    }
  }

  /** The trained demo model, or a shipped config's cached random checkpoint (made on first use). */
  public static Path ensure(String name) throws IOException {
    if (name.equals(DEFAULT)) return trained();
    Path dir = home().resolve("models").resolve(name);
    if (Files.isRegularFile(dir.resolve("model.safetensors")) && Files.isRegularFile(dir.resolve("tokenizer.json"))) return dir;
    System.err.println("moemesh: making the '" + name + "' demo model in " + dir + " (once; it is cached)");
    Files.createDirectories(dir.getParent());
    Path temp = Files.createTempDirectory(dir.getParent(), name + ".partial-");
    DemoCheckpoint.write(config(name), temp, DEFAULT_SEED, DemoCheckpoint.Format.BF16, 0, TokenizerFiles::write, progress("writing"));
    try {
      Files.move(temp, dir, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      if (!Files.isRegularFile(dir.resolve("model.safetensors"))) throw e; // else another process won the race
    }
    return dir;
  }

  /** The repository's {@code models/demo}: under {@code moemesh.root}, else above this class's build output. */
  static Path trained() {
    String root = System.getProperty(ROOT_PROPERTY);
    Path dir = root != null ? Path.of(root) : repositoryOf(DemoModels.class);
    if (dir != null && Files.isRegularFile(dir.resolve("models/demo/model.safetensors"))) return dir.resolve("models/demo");
    throw new UsageException("the trained demo model lives in the repository's models/demo; run bin/moemesh from a clone"
        + " (or give --model DIR)");
  }

  /** The clone a class was built in ({@code <root>/<module>/target/classes}), or null. */
  private static Path repositoryOf(Class<?> type) {
    try {
      Path classes = Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
      Path root = classes.getParent() == null || classes.getParent().getParent() == null ? null : classes.getParent().getParent().getParent();
      return root != null && Files.isDirectory(root.resolve("models")) ? root : null;
    } catch (java.net.URISyntaxException | RuntimeException e) {
      return null;
    }
  }

  /** A progress line on stderr, rewritten in place, every whole percent. */
  public static LoadProgress progress(String verb) {
    return new LoadProgress() {
      private long lastPercent = -1;

      @Override
      public void loaded(long done, long total) {
        long percent = total == 0 ? 100 : done * 100 / total;
        if (percent == lastPercent) return;
        lastPercent = percent;
        System.err.printf("\r%s %3d%% (%d / %d MiB)", verb, percent, done >> 20, total >> 20);
        if (done >= total) System.err.println();
      }
    };
  }
}
