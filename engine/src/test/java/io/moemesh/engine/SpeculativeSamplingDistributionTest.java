package io.moemesh.engine;

import static io.moemesh.engine.EngineTest.randomPrompt;
import static io.moemesh.engine.SpeculativeDecodingTest.GREEDY;
import static io.moemesh.engine.SpeculativeDecodingTest.assertCountersAddUp;
import static io.moemesh.engine.SpeculativeDecodingTest.run;
import static org.assertj.core.api.Assertions.assertThat;

import io.moemesh.engine.SpeculativeDecodingTest.DraftRewriter;
import io.moemesh.engine.SpeculativeDecodingTest.SpecRun;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.Precision;
import io.moemesh.model.sampling.Sampler;
import io.moemesh.model.sampling.SamplingParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** MTP speculation with sampling keeps the target distribution, on the tiny model (real and oracle drafts). */
class SpeculativeSamplingDistributionTest {
  /**
   * Sampled tokens keep the target distribution: the joint law of the first two tokens (temperature 1, top-k 3, so 9
   * cells) over 600 seeds, against the main model's own probabilities (Pearson's chi-square, 8 degrees of freedom,
   * 26.12 = the 0.999 quantile). The second token is the first one verified: drafts from the real MTP module, and
   * from a one-hot oracle guessing the likeliest token (accepted often, so both branches of the sampler run), and
   * from the MTP module over a draft vocabulary that holds some of the likely second tokens and not others (drafts
   * cannot be those: q is zero there, and only the residual reaches them).
   */
  @ParameterizedTest
  @ValueSource(strings = {"mtp", "oracle", "mtp-draft-vocabulary"})
  void theFirstTokensKeepTheTargetDistribution(String drafts) throws Exception {
    DeepseekModel model = TinyModel.model(Precision.BF16);
    boolean oracleDrafts = drafts.equals("oracle");
    int[] prompt = randomPrompt(42, 11);
    var params = SamplingParams.builder().temperature(1.0).topK(3).ignoreEos(true);
    var kv = new KvCacheConfig(400, 8, true);
    var scheduler = SchedulerConfig.defaults().withMaxRunningRequests(64);
    // the target: p(t1) from the prompt's last row, p(t2 | t1) from the row after each t1
    Map<Integer, float[]> rows = new ConcurrentHashMap<>();
    float[] first = lastRow(model, prompt);
    int[] top1 = topK(first, 3);
    double[] p1 = softmaxOf(first, top1);
    Map<Integer, int[]> top2 = new HashMap<>();
    Map<Integer, double[]> p2 = new HashMap<>();
    for (int t1 : top1) {
      int[] extended = Arrays.copyOf(prompt, prompt.length + 1);
      extended[prompt.length] = t1;
      float[] row = lastRow(model, extended);
      top2.put(t1, topK(row, 3));
      p2.put(t1, softmaxOf(row, top2.get(t1)));
    }
    if (drafts.equals("mtp-draft-vocabulary")) { // the two lowest ids of the likely second tokens in, the others out
      int[] likely = top2.values().stream().flatMapToInt(Arrays::stream).distinct().sorted().toArray();
      model.draftVocabulary(likely[1] + 1);
    }
    int n = 600;
    List<GenerationRequest> requests = new ArrayList<>();
    for (int i = 0; i < n; i++) requests.add(GenerationRequest.of("s" + i, prompt, params.seed(1000L + i).build(), 3));
    int guess = top2.get(top1[0])[0]; // the likeliest second token after the likeliest first
    DraftRewriter oracle = oracleDrafts ? (id, numTokens, d) -> List.of(new Sampler.Draft(guess, null, 1)) : null;
    SpecRun mtp;
    try {
      mtp = run(model, scheduler, kv, requests, 2, oracle, false);
    } finally {
      model.draftVocabulary(0); // the model is shared by the tests
    }
    long[][] observed = new long[3][3];
    for (GenerationRequest r : requests) {
      int[] t = mtp.run().tokens(r.id());
      int i = indexOf(top1, t[0]);
      assertThat(i).as("t1 in the top 3").isNotNegative();
      int j = indexOf(top2.get(t[0]), t[1]);
      assertThat(j).as("t2 in the top 3 after t1").isNotNegative();
      observed[i][j]++;
    }
    double chi = 0;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        double e = n * p1[i] * p2.get(top1[i])[j];
        chi += (observed[i][j] - e) * (observed[i][j] - e) / e;
      }
    SpecDecodeStats s = mtp.run().stats().speculation();
    System.out.printf("sampling, %s drafts: chi²=%.2f, %s, observed %s%n", drafts, chi, s, Arrays.deepToString(observed));
    assertThat(chi).isLessThan(26.12);
    assertThat(s.numDrafts()).isEqualTo(n); // one verification per request: max_tokens 3 leaves room for one draft
    assertCountersAddUp(s, 2);
    if (oracleDrafts) assertThat(s.numAcceptedTokens()).isPositive();
  }

  static float[] lastRow(DeepseekModel model, int[] prompt) throws Exception {
    var run = EngineTest.run(model, EngineTest.ROOMY, new KvCacheConfig(64, 8, false), List.of(GenerationRequest.of("ref", prompt, GREEDY, 1)));
    return run.logits().get("ref").get(prompt.length - 1);
  }

  static int[] topK(float[] row, int k) {
    Integer[] ids = new Integer[row.length];
    for (int i = 0; i < ids.length; i++) ids[i] = i;
    Arrays.sort(ids, (a, b) -> row[a] != row[b] ? Float.compare(row[b], row[a]) : Integer.compare(a, b));
    int[] out = new int[k];
    for (int i = 0; i < k; i++) out[i] = ids[i];
    return out;
  }

  static double[] softmaxOf(float[] row, int[] ids) {
    double max = row[ids[0]], sum = 0;
    double[] p = new double[ids.length];
    for (int i = 0; i < ids.length; i++) sum += p[i] = Math.exp(row[ids[i]] - max);
    for (int i = 0; i < ids.length; i++) p[i] /= sum;
    return p;
  }

  static int indexOf(int[] ids, int id) {
    for (int i = 0; i < ids.length; i++) if (ids[i] == id) return i;
    return -1;
  }
}
