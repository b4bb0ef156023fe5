package io.moemesh.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.imageio.ImageIO;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.XYPlot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The chart drawn from a recorded ramp: a PNG of the stated size, with a panel per figure and a series per line. */
class ServeChartsTest {

  /** A 3-phase ramp's requests whose TTFT grows with the rate, and a planner that scales decode from 1 to 2 replicas. */
  private static ServeBench.Result recordedRamp(ServeOptions o) {
    ArrivalSchedule schedule = ArrivalSchedule.of(o.load(), 0, 11);
    List<TimedResult> requests = new ArrayList<>();
    for (int i = 0; i < schedule.size(); i++) {
      double rate = ((Load.Ramp) o.load()).phases().get(schedule.phaseOf(i)).rate();
      double ttft = 0.05 * rate + 0.01 * (i % 7);
      requests.add(new TimedResult(schedule.sendSeconds(i), schedule.phaseOf(i),
          new RequestResult(true, null, 64, 16, ttft, List.of(), ttft + 15 * 0.004 * rate)));
    }
    List<PlannerReplicas.Sample> replicas = new ArrayList<>();
    for (int t = 0; t < 40; t++) {
      replicas.add(new PlannerReplicas.Sample(t, "decode", "desired", t < 12 ? 1 : 2));
      replicas.add(new PlannerReplicas.Sample(t + 0.01, "decode", "actual", t < 17 ? 1 : 2));
      replicas.add(new PlannerReplicas.Sample(t + 0.02, "prefill", "actual", 1));
    }
    return new ServeBench.Result(requests, 41, null, schedule, replicas);
  }

  @Test
  void rendersTheRecordedRampToAPngOfTheStatedSize(@TempDir Path dir) throws Exception {
    var o = ServeOptions.parse("--url", "http://h:1", "--ramp", "2:10,8:20,2:10", "--goodput", "ttft:300", "tpot:30", "--json",
        dir.resolve("ramp.json").toString(), "--window", "2");
    ServeBench.Result run = recordedRamp(o);
    Timeline timeline = run.timeline(o);
    ServeCharts.Figure figure = ServeCharts.Figure.of(o, "demo", timeline, run);

    CombinedDomainXYPlot plot = (CombinedDomainXYPlot) ServeCharts.chart(figure).getPlot();
    List<XYPlot> panels = plot.getSubplots();
    assertThat(panels).hasSize(4);
    assertThat(panels).extracting(p -> p.getRangeAxis().getLabel()).containsExactly("TTFT (ms)", "TPOT (ms)", "requests/s", "replicas");
    assertThat(panels.get(0).getDataset().getSeriesCount()).isEqualTo(4); // p50, p90, p99 and the SLO's bound
    assertThat(panels.get(0).getDataset().getSeriesKey(3)).isEqualTo("TTFT SLO 300 ms");
    assertThat(panels.get(1).getDataset().getSeriesKey(3)).isEqualTo("TPOT SLO 30 ms");
    assertThat(panels.get(0).getRangeAxis().getUpperBound()).isGreaterThanOrEqualTo(300);
    assertThat(panels.get(2).getDataset().getSeriesCount()).isEqualTo(4); // offered, sent, achieved, goodput
    assertThat(panels.get(3).getDataset().getSeriesCount()).isEqualTo(3); // decode desired/actual, prefill actual
    assertThat(panels.get(1).getDomainMarkers(org.jfree.chart.ui.Layer.FOREGROUND)).hasSize(2); // the phase boundaries at 10 and 30 s
    assertThat(figure.offered()).containsExactly(new ServeCharts.Point(0, 2), new ServeCharts.Point(10, 8), new ServeCharts.Point(30, 2),
        new ServeCharts.Point(40, 2));

    Path png = o.chartFile();
    assertThat(png).isEqualTo(dir.resolve("ramp.png"));
    int height = ServeCharts.height(true);
    ServeCharts.write(png, figure, ServeCharts.WIDTH, height);
    assertThat(Files.size(png)).isPositive();
    BufferedImage image = ImageIO.read(png.toFile());
    assertThat(image).isNotNull();
    assertThat(image.getWidth()).isEqualTo(ServeCharts.WIDTH);
    assertThat(image.getHeight()).isEqualTo(height);
    assertThat(distinctColours(image)).as("a drawn chart, not a blank canvas").isGreaterThan(20);
  }

  @Test
  void withoutAPlannerThereIsNoReplicaPanel(@TempDir Path dir) throws Exception {
    var o = ServeOptions.parse("--url", "http://h:1", "--request-rate", "5", "--charts", dir.toString());
    ServeBench.Result run = new ServeBench.Result(List.of(new TimedResult(0, 0, new RequestResult(true, null, 8, 4, 0.1, List.of(), 0.2)),
        new TimedResult(0.1, 0, RequestResult.failed(8, "HTTP 429", 0.01))), 0.2, null, ArrivalSchedule.of(o.load(), 2, 0), List.of());
    ServeCharts.Figure figure = ServeCharts.Figure.of(o, "demo", run.timeline(o), run);
    List<XYPlot> panels = ((CombinedDomainXYPlot) ServeCharts.chart(figure).getPlot()).getSubplots();
    assertThat(panels).hasSize(3);
    assertThat(panels.getFirst().getDataset().getSeriesCount()).isEqualTo(3); // no SLO
    assertThat(panels.get(2).getDataset().getSeriesCount()).isEqualTo(4); // offered, sent, achieved, failed: no goodput
    assertThat(panels.get(2).getDataset().getSeriesKey(3)).isEqualTo("failed");
    ServeCharts.write(o.chartFile(), figure, 640, ServeCharts.height(false));
    BufferedImage image = ImageIO.read(dir.resolve("serve.png").toFile());
    assertThat(List.of(image.getWidth(), image.getHeight())).containsExactly(640, ServeCharts.height(false));
  }

  private static int distinctColours(BufferedImage image) {
    var colours = new java.util.HashSet<Integer>();
    for (int y = 0; y < image.getHeight(); y += 3) for (int x = 0; x < image.getWidth(); x += 3) colours.add(image.getRGB(x, y));
    return colours.size();
  }
}
