package io.moemesh.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.kernels.TensorArena;
import io.moemesh.model.checkpoint.Checkpoint;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The offline CLI as a user runs it: a real JVM process per command, on the tiny model. */
class OfflineCliTest {
  @TempDir static Path work;
  static Path model;

  record Run(int exit, String out, String err) {}

  @BeforeAll
  static void makeModel() throws Exception {
    model = work.resolve("tiny");
    Run run = cli("make-model", "--config", "tiny", "--out", model.toString(), "--seed", "3");
    assertThat(run.exit()).as(run.err()).isZero();
  }

  @Nested
  class MakeModel {
    @Test
    void writesACompleteCheckpoint() {
      for (String file : List.of("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"))
        assertThat(model.resolve(file)).isRegularFile();
    }

    @Test
    void sameSeedGivesTheSameBytes() throws Exception {
      Path again = work.resolve("tiny-again");
      assertThat(cli("make-model", "--config", "tiny", "--out", again.toString(), "--seed", "3").exit()).isZero();
      for (String file : List.of("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"))
        assertThat(Files.readAllBytes(again.resolve(file))).as(file).isEqualTo(Files.readAllBytes(model.resolve(file)));
    }

    @Test
    void routerSkewMovesOnlyTheGateBiases() throws Exception {
      Path skewed = work.resolve("tiny-skewed");
      Run run = cli("make-model", "--config", "tiny", "--out", skewed.toString(), "--seed", "3", "--router-skew", "0.25");
      assertThat(run.exit()).as(run.err()).isZero();
      for (String file : List.of("config.json", "tokenizer.json", "tokenizer_config.json"))
        assertThat(Files.readAllBytes(skewed.resolve(file))).as(file).isEqualTo(Files.readAllBytes(model.resolve(file)));
      try (var a = Checkpoint.open(model); var b = Checkpoint.open(skewed); var arena = TensorArena.open()) {
        for (String name : a.names())
          assertThat(Arrays.equals(a.load(name, arena).toFloatArray(), b.load(name, arena).toFloatArray()))
              .as(name).isEqualTo(!name.endsWith("e_score_correction_bias"));
      }
      Run negative = cli("make-model", "--config", "tiny", "--out", work.resolve("y").toString(), "--router-skew", "-1");
      assertThat(negative.exit()).isEqualTo(2);
      assertThat(negative.err()).contains("--router-skew must be a number ≥ 0");
    }

    @Test
    void unknownFormatIsAUsageError() throws Exception {
      Run run = cli("make-model", "--config", "tiny", "--out", work.resolve("x").toString(), "--format", "fp4");
      assertThat(run.exit()).isEqualTo(2);
      assertThat(run.err()).contains("moemesh make-model: Invalid value for option '--format': expected one of [BF16, FP8]")
          .contains("but was 'fp4'");
    }
  }

  @Nested
  class MakeTokenizer {
    @Test
    void learnsTheVocabularyOfTheGivenFiles() throws Exception {
      Path a = work.resolve("a.txt"), b = work.resolve("b.txt"), out = work.resolve("tok");
      Files.writeString(a, "The fox ran. The fox hid. The fox sang.\n");
      Files.writeString(b, "A hedgehog and a hedgehog met a hedgehog.\n");
      Run run = cli("make-tokenizer", "--corpus", a + "," + b, "--vocab-size", "400", "--out", out.toString());
      assertThat(run.exit()).as(run.err()).isZero();
      assertThat(run.err()).contains("400 ids");
      var json = new com.fasterxml.jackson.databind.ObjectMapper().readTree(out.resolve("tokenizer.json").toFile());
      assertThat(json.get("model").get("vocab").size()).isEqualTo(400);
      assertThat(json.get("model").get("vocab").has("Ġfox")).isTrue();
      assertThat(json.get("model").get("vocab").has("Ġhedgehog")).isTrue();
      assertThat(out.resolve("tokenizer_config.json")).isRegularFile();
    }

    @Test
    void missingCorpusFileIsAUsageError() throws Exception {
      Run run = cli("make-tokenizer", "--corpus", work.resolve("none.txt").toString(), "--vocab-size", "400",
          "--out", work.resolve("tok2").toString());
      assertThat(run.exit()).isEqualTo(2);
      assertThat(run.err()).contains("no such file");
    }

    @Test
    void tooSmallVocabularyIsAUsageError() throws Exception {
      Files.writeString(work.resolve("c.txt"), "x");
      Run run = cli("make-tokenizer", "--corpus", work.resolve("c.txt").toString(), "--vocab-size", "100",
          "--out", work.resolve("tok3").toString());
      assertThat(run.exit()).isEqualTo(2);
      assertThat(run.err()).contains("below the minimum 275");
    }
  }

  @Nested
  class Generate {
    @Test
    void greedyIdsAreTheArgmaxOfTheLogitsWritten() throws Exception {
      Path npy = work.resolve("logits.npy");
      Run run = cli("generate", "--model", model.toString(), "--prompt-ids", "0,5,17,300,42", "--max-new-tokens", "6",
          "--precision", "exact", "--ignore-eos", "--logits-out", npy.toString());
      assertThat(run.exit()).as(run.err()).isZero();
      int[] generated = ids(run.err(), "generated ids: ");
      assertThat(generated).hasSize(6);
      float[][] logits = readNpy(npy, 1024);
      assertThat(logits).hasNumberOfRows(5 + 6 - 1); // every fed token: 5 prompt rows, then 5 decode steps
      for (int i = 0; i < generated.length; i++) assertThat(argmax(logits[4 + i])).as("token %d", i).isEqualTo(generated[i]);
    }

    @Test
    void speculativeDecodingGivesTheGreedyIdsAndReportsAcceptance() throws Exception {
      String[] plain = {"generate", "--model", model.toString(), "--prompt-ids", "0,5,17,300,42", "--max-new-tokens", "9", "--ignore-eos"};
      Run off = cli(plain);
      String[] withMtp = java.util.Arrays.copyOf(plain, plain.length + 2);
      withMtp[plain.length] = "--speculative-tokens";
      withMtp[plain.length + 1] = "2";
      Run on = cli(withMtp);
      assertThat(on.exit()).as(on.err()).isZero();
      assertThat(ids(on.err(), "generated ids: ")).isEqualTo(ids(off.err(), "generated ids: ")).hasSize(9);
      assertThat(on.err()).contains("speculative decoding (MTP, k=2): ");
    }

    @Test
    void samePromptAndSeedGiveTheSameSample() throws Exception {
      String[] args = {"generate", "--model", model.toString(), "--prompt", "Hello, world", "--max-new-tokens", "8",
          "--temperature", "0.8", "--seed", "42", "--ignore-eos"};
      Run a = cli(args), b = cli(args);
      assertThat(a.exit()).as(a.err()).isZero();
      assertThat(ids(a.err(), "generated ids: ")).isEqualTo(ids(b.err(), "generated ids: ")).hasSize(8);
    }

    @Test
    void chatUsesTheTemplate() throws Exception {
      Run run = cli("generate", "--model", model.toString(), "--chat", "Hi", "--max-new-tokens", "2");
      assertThat(run.exit()).as(run.err()).isZero();
      assertThat(ids(run.err(), "prompt ids: ")[0]).isZero(); // the template starts with BOS
    }

    @Test
    void promptIdOutsideTheVocabularyIsAUsageError() throws Exception {
      Run run = cli("generate", "--model", model.toString(), "--prompt-ids", "1,99999", "--max-new-tokens", "1");
      assertThat(run.exit()).isEqualTo(2);
      assertThat(run.err()).contains("99999 is outside the vocabulary [0, 1024)");
    }

    @Test
    void badSamplingParameterNamesIt() throws Exception {
      Run run = cli("generate", "--model", model.toString(), "--prompt", "x", "--temperature", "7");
      assertThat(run.exit()).isEqualTo(2);
      assertThat(run.err()).contains("temperature");
    }

    @Test
    void twoInputsAreRefused() throws Exception {
      Run run = cli("generate", "--model", model.toString(), "--prompt", "x", "--chat", "y");
      assertThat(run.exit()).isEqualTo(2);
      assertThat(run.err()).contains("moemesh generate: Error: --prompt=TEXT, --chat=TEXT are mutually exclusive (specify only one)");
    }
  }

  /** The generated usage, and what a wrong command line answers: exit code 2, what is wrong, then the usage. */
  @Nested
  class Usage {
    @Test
    void helpPrintsTheGeneratedUsageOfEveryCommand() throws Exception {
      Run root = cli("--help");
      assertThat(root.exit()).as(root.err()).isZero();
      assertThat(root.out()).startsWith("Usage: moemesh").contains("up", "make-model", "make-tokenizer", "generate")
          .doesNotContain("demo-model"); // for scripts, not listed
      Run generate = cli("generate", "--help");
      assertThat(generate.exit()).isZero();
      assertThat(generate.out()).startsWith("Usage: moemesh generate")
          .contains("--model=DIR", "--prompt=TEXT", "--chat=TEXT", "--prompt-ids=ID", "--max-new-tokens=N", "--precision=exact|bf16|int8",
              "--temperature=T", "--top-p=P", "--top-k=K", "--seed=S", "--logits-out=FILE.npy", "--kernels=native|reference",
              "--threads=N", "--ignore-eos", "--speculative-tokens=K", "(default: 16)");
      assertThat(cli("help", "make-model").out()).startsWith("Usage: moemesh make-model")
          .contains("--config=FILE|tiny|small|bench", "--out=DIR", "--seed=N", "--format=bf16|fp8", "--router-skew=S");
      assertThat(cli("up", "--help").out()).startsWith("Usage: moemesh up").contains("--decode-replicas=N", "--balance-every=D",
          "(default: 60s; 0 = never)", "--planner", "--max-replicas=N").doesNotContain("--settings-out");
      assertThat(cli("make-tokenizer", "-h").out()).startsWith("Usage: moemesh make-tokenizer")
          .contains("--corpus=FILE", "--vocab-size=V", "--bos-id=N", "--eos-id=N", "--model-max-length=L");
    }

    @Test
    void aBadOptionValueNamesTheOptionAndTheValue() throws Exception {
      Run run = cli("generate", "--model", model.toString(), "--prompt", "x", "--precision", "fp4");
      assertThat(run.exit()).isEqualTo(2);
      assertThat(run.err()).startsWith("moemesh generate: Invalid value for option '--precision': expected one of [EXACT, BF16, INT8]")
          .contains("but was 'fp4'").contains("Usage: moemesh generate");
      assertThat(run.out()).isEmpty();
      Run range = cli("generate", "--model", model.toString(), "--prompt", "x", "--threads", "0");
      assertThat(range.exit()).isEqualTo(2);
      assertThat(range.err()).startsWith("moemesh generate: --threads must be in [1, 256], got 0");
      Run notANumber = cli("generate", "--model", model.toString(), "--prompt", "x", "--max-new-tokens", "many");
      assertThat(notANumber.exit()).isEqualTo(2);
      assertThat(notANumber.err()).startsWith("moemesh generate: Invalid value for option '--max-new-tokens': 'many' is not an int");
    }

    @Test
    void missingUnknownAndRepeatedArgumentsAreUsageErrors() throws Exception {
      Run noPrompt = cli("generate", "--model", model.toString());
      assertThat(noPrompt.exit()).isEqualTo(2);
      assertThat(noPrompt.err()).contains("Missing required argument (specify one of these): (--prompt=TEXT | --chat=TEXT | --prompt-ids=ID");
      Run unknownOption = cli("generate", "--model", model.toString(), "--prompt", "x", "--max-tokens", "3");
      assertThat(unknownOption.exit()).isEqualTo(2);
      assertThat(unknownOption.err()).startsWith("moemesh generate: Unknown options: '--max-tokens', '3'")
          .contains("Possible solutions: --max-new-tokens");
      Run twice = cli("make-model", "--config", "tiny", "--config", "small", "--out", work.resolve("z").toString());
      assertThat(twice.exit()).isEqualTo(2);
      assertThat(twice.err()).contains("option '--config' (FILE|tiny|small|bench) should be specified only once");
      Run unknownCommand = cli("genrate");
      assertThat(unknownCommand.exit()).isEqualTo(2);
      assertThat(unknownCommand.err()).startsWith("moemesh: Unmatched argument at index 0: 'genrate'").contains("generate");
      Run none = cli();
      assertThat(none.exit()).isEqualTo(2);
      assertThat(none.err()).startsWith("moemesh: no command given");
    }
  }

  static Run cli(String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Main.class.getName()));
    command.addAll(Arrays.asList(args));
    var pb = new ProcessBuilder(command);
    pb.environment().put("MOEMESH_HOME", work.resolve("home").toString());
    Process p = pb.start();
    var out = p.getInputStream().readAllBytes();
    var err = p.getErrorStream().readAllBytes();
    if (!p.waitFor(120, TimeUnit.SECONDS)) p.destroyForcibly();
    return new Run(p.exitValue(), new String(out, StandardCharsets.UTF_8), new String(err, StandardCharsets.UTF_8));
  }

  static int[] ids(String text, String label) {
    Matcher m = Pattern.compile(Pattern.quote(label) + "\\[([0-9, ]*)\\]").matcher(text);
    assertThat(m.find()).as("'%s' in: %s", label, text).isTrue();
    return Arrays.stream(m.group(1).split(",\\s*")).filter(s -> !s.isEmpty()).mapToInt(Integer::parseInt).toArray();
  }

  static float[][] readNpy(Path file, int cols) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
    assertThat(b.get() & 0xFF).isEqualTo(0x93);
    b.position(8);
    int headerLength = b.getShort() & 0xFFFF;
    String header = StandardCharsets.US_ASCII.decode(b.slice(10, headerLength)).toString();
    assertThat(header).contains("'descr': '<f4'").contains("'fortran_order': False").endsWith("\n");
    assertThat((10 + headerLength) % 64).isZero();
    b.position(10 + headerLength);
    int rows = b.remaining() / 4 / cols;
    assertThat(header).contains("'shape': (" + rows + ", " + cols + ")");
    float[][] out = new float[rows][cols];
    for (float[] row : out) for (int c = 0; c < cols; c++) row[c] = b.getFloat();
    return out;
  }

  static int argmax(float[] v) {
    int best = 0;
    for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
    return best;
  }
}
