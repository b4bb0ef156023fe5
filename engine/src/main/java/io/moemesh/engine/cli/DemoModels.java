package io.moemesh.engine.cli;

import io.moemesh.model.LoadProgress;
import io.moemesh.model.demo.DemoCheckpoint;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The shipped model configs ({@code tiny}, {@code small}, {@code bench}) and the cache of demo checkpoints
 * made from them: {@code $MOEMESH_HOME/models/<name>} (default {@code ~/.cache/moemesh}). A checkpoint is
 * written to a temporary folder and renamed when complete, so an interrupted run never leaves half a model.
 */
public final class DemoModels {
  public static final String DEFAULT = "small";
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

  /** The cached demo checkpoint of a shipped config, made on first use. */
  public static Path ensure(String name) throws IOException {
    Path dir = home().resolve("models").resolve(name);
    if (Files.isRegularFile(dir.resolve("model.safetensors")) && Files.isRegularFile(dir.resolve("tokenizer.json"))) return dir;
    System.err.println("moemesh: making the '" + name + "' demo model in " + dir + " (once; it is cached)");
    Files.createDirectories(dir.getParent());
    Path temp = Files.createTempDirectory(dir.getParent(), name + ".partial-");
    DemoCheckpoint.write(config(name), temp, DEFAULT_SEED, DemoCheckpoint.Format.BF16, progress("writing"));
    try {
      Files.move(temp, dir, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      if (!Files.isRegularFile(dir.resolve("model.safetensors"))) throw e; // else another process won the race
    }
    return dir;
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
