package io.moemesh.e2e;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs the npm `openai` client script in e2e-tests/src/test/node, installing its locked dependencies first if missing. */
final class NodeClient {
  static final Path DIR = ServiceProcess.ROOT.resolve("e2e-tests/src/test/node");

  record Result(int exitCode, String output) {}

  static Result run(String script, String... args) throws IOException, InterruptedException {
    if (!Files.isDirectory(DIR.resolve("node_modules/openai"))) {
      Result install = exec(List.of("npm", "ci", "--no-audit", "--no-fund"), 300);
      if (install.exitCode() != 0) throw new IllegalStateException("npm ci failed:\n" + install.output());
    }
    var cmd = new java.util.ArrayList<>(List.of("node", script));
    cmd.addAll(List.of(args));
    return exec(cmd, 300);
  }

  private static Result exec(List<String> cmd, int timeoutSeconds) throws IOException, InterruptedException {
    Process p;
    try {
      p = new ProcessBuilder(cmd).directory(DIR.toFile()).redirectErrorStream(true).start();
    } catch (IOException e) {
      throw new IllegalStateException(cmd.getFirst() + " is not installed: the e2e tests need Node.js 20 and npm "
          + "(.ci/run installs them)", e);
    }
    if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IllegalStateException(String.join(" ", cmd) + " did not finish in " + timeoutSeconds + " s");
    }
    return new Result(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
  }
}
