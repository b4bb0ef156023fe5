package io.moemesh.engine.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The command line is the cli package's business: the engine's other packages never see picocli (docs/architecture.md). */
class PicocliOnlyInCliTest {
  @Test
  void noSourceOutsideTheCliPackageImportsPicocli() throws IOException {
    Path sources = Path.of("src/main/java/io/moemesh/engine");
    assertThat(sources).isDirectory(); // surefire runs in the module's directory
    List<Path> offenders;
    try (Stream<Path> files = Files.walk(sources)) {
      offenders = files.filter(f -> f.toString().endsWith(".java"))
          .filter(f -> !f.startsWith(sources.resolve("cli")))
          .filter(PicocliOnlyInCliTest::importsPicocli)
          .toList();
    }
    assertThat(offenders).isEmpty();
    try (Stream<Path> files = Files.walk(sources.resolve("cli"))) {
      assertThat(files.filter(PicocliOnlyInCliTest::importsPicocli).count()).as("the check finds an import").isPositive();
    }
  }

  private static boolean importsPicocli(Path file) {
    try {
      return file.toString().endsWith(".java") && Files.readString(file).contains("import picocli.");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
