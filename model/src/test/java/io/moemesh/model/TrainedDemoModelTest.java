package io.moemesh.model;

import static io.moemesh.model.ModelRuns.mtpOneShot;
import static io.moemesh.model.ModelRuns.prefill;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.tokenizer.Tokenizer;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The trained demo model shipped in {@code models/demo} against the PyTorch code that trained it
 * ({@code tools/train-demo}): its fixtures, written by {@code fixture.py}, hold the ids {@code bpe.py} gives and the
 * float32 logits of the PyTorch forward on the exported weights. The engine at exact precision must reproduce them
 * to float32 noise — main model and MTP head — and the Hugging Face runtime must tokenize as {@code bpe.py} does.
 */
class TrainedDemoModelTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String FIXTURES = "/io/moemesh/model/demo/";
  /** Largest |engine − PyTorch| allowed on a logit: both float32, summing in different orders (measured 1.5e-5 of 20). */
  private static final double LOGIT_NOISE = 2e-4;

  static Path modelDir;
  static NativeKernels kernels;
  static DeepseekModel exact;

  @BeforeAll
  static void load() {
    modelDir = shippedModel();
    kernels = NativeKernels.create(2);
    exact = DeepseekModel.load(modelDir, Precision.EXACT, kernels, null);
  }

  @AfterAll
  static void close() {
    exact.close();
    kernels.close();
  }

  @Test
  void runtimeTokenizesAsTheTrainingCodeDid() throws IOException {
    JsonNode cases = fixture("tokenizer-cases.json");
    assertThat(cases.size()).isGreaterThan(20);
    try (Tokenizer t = Tokenizer.load(modelDir)) {
      for (JsonNode c : cases) assertThat(t.encode(c.get("text").asText())).as(c.get("text").asText()).containsExactly(ints(c.get("ids")));
    }
  }

  @Test
  void theMtpModuleUsesTheMainHeadAndEmbeddingItStoresCopiesOf() {
    assertThat(exact.mtpSharesHead(0)).isTrue();
    assertThat(exact.mtpSharesEmbedding(0)).isTrue();
  }

  @Test
  void exactLogitsMatchPyTorch() throws IOException {
    for (JsonNode p : fixture("prompts.json").get("prompts")) {
      int[] ids = ints(p.get("ids"));
      float[][] engine = prefill(exact, ids);
      assertThat(maxAbsDiff(engine, npy(p, ""))).as(p.get("name").asText()).isLessThan(LOGIT_NOISE);
      assertArgmaxAndMax(engine, p.get("argmax"), p.get("max"), p.get("name").asText());
    }
  }

  @Test
  void exactMtpLogitsMatchPyTorch() throws IOException {
    for (JsonNode p : fixture("prompts.json").get("prompts")) {
      float[][] engine = mtpOneShot(exact, ints(p.get("ids")));
      assertThat(maxAbsDiff(engine, npy(p, "-mtp"))).as(p.get("name").asText()).isLessThan(LOGIT_NOISE);
      assertArgmaxAndMax(engine, p.get("mtp_argmax"), p.get("mtp_max"), p.get("name").asText() + " (MTP)");
    }
  }

  /** BF16 and INT8 weights move the logits a little (measured 0.10 and 2.4 on logits up to 22) but not the greedy choice. */
  @ParameterizedTest
  @EnumSource(value = Precision.class, names = {"BF16", "INT8"})
  void reducedPrecisionKeepsTheGreedyTokens(Precision precision) throws IOException {
    try (DeepseekModel model = DeepseekModel.load(modelDir, precision, kernels, null)) {
      for (JsonNode p : fixture("prompts.json").get("prompts")) {
        float[][] engine = prefill(model, ints(p.get("ids")));
        float[][] reference = npy(p, "");
        double scale = maxAbs(reference); // the bound follows the logits' range: a sharper model has larger logits
        assertThat(maxAbsDiff(engine, reference)).as(p.get("name").asText()).isLessThan((precision == Precision.BF16 ? 0.01 : 0.15) * scale);
        for (int t = 0; t < engine.length; t++) assertThat(argmax(engine[t])).as("%s row %d", p.get("name").asText(), t).isEqualTo(p.get("argmax").get(t).asInt());
      }
    }
  }

  private static double maxAbs(float[][] rows) {
    double max = 0;
    for (float[] row : rows) for (float v : row) max = Math.max(max, Math.abs(v));
    return max;
  }

  private static int argmax(float[] row) {
    int best = 0;
    for (int v = 1; v < row.length; v++) if (row[v] > row[best]) best = v;
    return best;
  }

  /** The whole-vocabulary argmax equals PyTorch's, and its logit too (the fixture keeps only a vocabulary slice). */
  private static void assertArgmaxAndMax(float[][] engine, JsonNode argmax, JsonNode max, String what) {
    assertThat(engine).as(what).hasNumberOfRows(argmax.size());
    for (int t = 0; t < engine.length; t++) {
      int best = argmax(engine[t]);
      assertThat(best).as("%s row %d", what, t).isEqualTo(argmax.get(t).asInt());
      assertThat((double) engine[t][best]).as("%s row %d", what, t).isCloseTo(max.get(t).asDouble(), org.assertj.core.data.Offset.offset(LOGIT_NOISE));
    }
  }

  /** max |a − b| over b's columns (a vocabulary prefix). */
  private static double maxAbsDiff(float[][] engine, float[][] expected) {
    assertThat(engine).hasNumberOfRows(expected.length);
    double max = 0;
    for (int t = 0; t < expected.length; t++)
      for (int v = 0; v < expected[t].length; v++) max = Math.max(max, Math.abs(engine[t][v] - expected[t][v]));
    return max;
  }

  private float[][] npy(JsonNode prompt, String suffix) throws IOException {
    int k = 0;
    for (JsonNode p : fixture("prompts.json").get("prompts")) {
      if (p.get("name").equals(prompt.get("name"))) break;
      k++;
    }
    try (InputStream in = resource("prompt-" + k + suffix + ".npy")) {
      return readNpy(in.readAllBytes());
    }
  }

  /** A little-endian float32, C-order, 2-d .npy file. */
  static float[][] readNpy(byte[] bytes) {
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    int headerLength = b.getShort(8) & 0xFFFF;
    String header = new String(bytes, 10, headerLength, StandardCharsets.US_ASCII);
    assertThat(header).contains("'descr': '<f4'").contains("'fortran_order': False");
    String[] shape = header.replaceAll(".*'shape': \\((\\d+), (\\d+)\\).*\\s*", "$1 $2").trim().split(" ");
    int rows = Integer.parseInt(shape[0]), cols = Integer.parseInt(shape[1]);
    b.position(10 + headerLength);
    float[][] out = new float[rows][cols];
    for (float[] row : out) for (int i = 0; i < cols; i++) row[i] = b.getFloat();
    return out;
  }

  private static JsonNode fixture(String name) throws IOException {
    try (InputStream in = resource(name)) {
      return JSON.readTree(in);
    }
  }

  private static InputStream resource(String name) {
    InputStream in = TrainedDemoModelTest.class.getResourceAsStream(FIXTURES + name);
    assertThat(in).as("test resource " + FIXTURES + name).isNotNull();
    return in;
  }

  private static int[] ints(JsonNode array) {
    List<Integer> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asInt()));
    return out.stream().mapToInt(Integer::intValue).toArray();
  }

  /** {@code models/demo} of the repository, found from the module's working directory upwards. */
  static Path shippedModel() {
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      Path model = dir.resolve("models/demo");
      if (Files.isRegularFile(model.resolve("config.json"))) return model;
    }
    throw new IllegalStateException("models/demo not found above " + Path.of("").toAbsolutePath());
  }
}
