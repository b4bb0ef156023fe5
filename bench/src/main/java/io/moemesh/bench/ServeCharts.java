package io.moemesh.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.geom.Ellipse2D;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.annotations.XYTitleAnnotation;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.block.BlockBorder;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYItemRenderer;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.renderer.xy.XYStepRenderer;
import org.jfree.chart.title.LegendTitle;
import org.jfree.chart.ui.RectangleAnchor;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * {@code bench serve}'s chart, one PNG with panels on a shared time axis (seconds from the run's start): TTFT and
 * TPOT p50/p90/p99 per window of the requests sent in it (a dashed red line at an SLO's bound), the offered request rate
 * (the schedule's, stepped), the sent, achieved and failed rates and goodput per window, and, with a planner's metrics, its
 * replica counts per stage (desired and actual). Ramp phase boundaries are vertical lines on every panel.
 */
final class ServeCharts {
  static final int WIDTH = 1200;
  private static final int PANEL_HEIGHT = 280, TITLE_HEIGHT = 110;
  private static final BasicStroke DASHED = new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {8f, 4f}, 0f);
  private static final Color[] STAGE_COLORS = {new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c), new Color(0x9467bd),
      new Color(0x8c564b)};
  private static final Color[] PERCENTILE_COLORS = {new Color(0x1f77b4), new Color(0xff7f0e), new Color(0xd62728)};

  static {
    System.setProperty("java.awt.headless", "true"); // a benchmark box has no display
  }

  private ServeCharts() {}

  /** A point of a series; NaN {@code y} is a gap. */
  record Point(double x, double y) {}

  /**
   * What the chart shows: the title, the timeline, the offered rate as steps (empty: none), the SLOs, the ramp's
   * phase boundaries and the planner's samples.
   */
  record Figure(String title, Timeline timeline, List<Point> offered, Slos slos, List<Double> phaseBoundaries,
      List<PlannerReplicas.Sample> replicas) {
    static Figure of(ServeOptions o, String model, Timeline timeline, ServeBench.Result run) {
      List<Point> offered = new ArrayList<>();
      List<Double> boundaries = new ArrayList<>();
      ArrivalSchedule s = run.schedule();
      if (s != null && !s.phases().isEmpty()) {
        for (int p = 0; p < s.phases().size(); p++) {
          offered.add(new Point(s.phaseStart(p), s.phases().get(p).rate()));
          if (p > 0) boundaries.add(s.phaseStart(p));
        }
        offered.add(new Point(s.endSeconds(), s.phases().getLast().rate()));
      } else if (o.load() instanceof Load.Poisson p && Double.isFinite(p.rate()) && s != null) {
        offered.add(new Point(0, p.rate()));
        offered.add(new Point(s.endSeconds(), p.rate()));
      }
      String title = String.format(Locale.ROOT, "bench serve: %s, %s, %d+%d tokens%s", model, o.load().describe(), o.prefixLen() + o.inputLen(),
          o.outputLen(), o.slos().isEmpty() ? "" : ", SLOs " + o.slos());
      return new Figure(title, timeline, offered, o.slos(), boundaries, run.replicas());
    }
  }

  static int height(boolean replicas) {
    return TITLE_HEIGHT + PANEL_HEIGHT * (replicas ? 4 : 3);
  }

  static void write(Path png, Figure figure, int width, int height) throws IOException {
    Path parent = png.toAbsolutePath().getParent();
    if (parent != null) Files.createDirectories(parent);
    ChartUtils.saveChartAsPNG(png.toFile(), chart(figure), width, height);
  }

  static JFreeChart chart(Figure f) {
    var time = new NumberAxis("seconds from the start");
    var plot = new CombinedDomainXYPlot(time);
    plot.setGap(12);
    plot.add(latencyPanel(f, "TTFT (ms)", Timeline.Window::ttft, Slos.Metric.TTFT), 1);
    plot.add(latencyPanel(f, "TPOT (ms)", Timeline.Window::tpot, Slos.Metric.TPOT), 1);
    plot.add(ratePanel(f), 1);
    if (!f.replicas().isEmpty()) plot.add(replicaPanel(f), 1);
    for (Object sub : plot.getSubplots()) {
      var p = (XYPlot) sub;
      var legend = new LegendTitle(p); // each panel its own legend: the combined one would repeat p50/p90/p99
      legend.setBackgroundPaint(new Color(255, 255, 255, 210));
      legend.setFrame(new BlockBorder(Color.LIGHT_GRAY));
      legend.setItemFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
      p.addAnnotation(new XYTitleAnnotation(0.005, 0.99, legend, RectangleAnchor.TOP_LEFT));
      p.setBackgroundPaint(Color.WHITE);
      p.setDomainGridlinePaint(Color.LIGHT_GRAY);
      p.setRangeGridlinePaint(Color.LIGHT_GRAY);
      for (double b : f.phaseBoundaries()) {
        var m = new ValueMarker(b, Color.GRAY, new BasicStroke(1f));
        p.addDomainMarker(m);
      }
    }
    var chart = new JFreeChart(f.title(), new Font(Font.SANS_SERIF, Font.BOLD, 15), plot, false);
    chart.setBackgroundPaint(Color.WHITE);
    return chart;
  }

  private static XYPlot latencyPanel(Figure f, String label, Function<Timeline.Window, ServeStats.Summary> figure,
      Slos.Metric metric) {
    var data = new XYSeriesCollection();
    String name = metric.key().toUpperCase(Locale.ROOT);
    data.addSeries(windowSeries(f, name + " p50", w -> figure.apply(w).p50() * 1e3));
    data.addSeries(windowSeries(f, name + " p90", w -> figure.apply(w).p90() * 1e3));
    data.addSeries(windowSeries(f, name + " p99", w -> figure.apply(w).p99() * 1e3));
    var renderer = new XYLineAndShapeRenderer(true, true);
    for (int i = 0; i < 3; i++) {
      renderer.setSeriesPaint(i, PERCENTILE_COLORS[i]);
      renderer.setSeriesStroke(i, new BasicStroke(2f));
      renderer.setSeriesShape(i, new Ellipse2D.Double(-2.5, -2.5, 5, 5));
    }
    Double bound = f.slos().millis().get(metric);
    if (bound != null && !f.timeline().windows().isEmpty()) { // a series, not a marker: the axis then always reaches it
      var slo = new XYSeries(name + " SLO " + RatePhase.trim(bound) + " ms", false);
      slo.add(0, bound);
      Timeline.Window last = f.timeline().windows().getLast();
      slo.add(last.startSeconds() + last.seconds(), bound);
      data.addSeries(slo);
      renderer.setSeriesPaint(3, Color.RED);
      renderer.setSeriesStroke(3, DASHED);
      renderer.setSeriesShapesVisible(3, false);
    }
    var axis = new NumberAxis(label);
    axis.setAutoRangeIncludesZero(true);
    return new XYPlot(data, null, axis, renderer);
  }

  private static XYPlot ratePanel(Figure f) {
    var data = new XYSeriesCollection();
    var renderer = new XYLineAndShapeRenderer(true, false);
    int i = 0;
    if (!f.offered().isEmpty()) {
      var offered = new XYSeries("offered (schedule)", false);
      f.offered().forEach(p -> offered.add(p.x(), p.y()));
      data.addSeries(stepped(offered));
      renderer.setSeriesPaint(i, Color.BLACK);
      renderer.setSeriesStroke(i++, DASHED);
    }
    data.addSeries(windowSeries(f, "sent", Timeline.Window::sentRate));
    renderer.setSeriesPaint(i, new Color(0x7f7f7f));
    renderer.setSeriesStroke(i++, new BasicStroke(1.5f));
    data.addSeries(windowSeries(f, "achieved (completed)", Timeline.Window::achievedRate));
    renderer.setSeriesPaint(i, new Color(0x9467bd));
    renderer.setSeriesStroke(i++, new BasicStroke(2f));
    if (!f.slos().isEmpty()) {
      data.addSeries(windowSeries(f, "goodput", Timeline.Window::goodput));
      renderer.setSeriesPaint(i, new Color(0x2ca02c));
      renderer.setSeriesStroke(i++, new BasicStroke(2f));
    }
    if (f.timeline().windows().stream().anyMatch(w -> w.failed() > 0)) {
      data.addSeries(windowSeries(f, "failed", Timeline.Window::failedRate));
      renderer.setSeriesPaint(i, Color.RED);
      renderer.setSeriesStroke(i, new BasicStroke(1.5f));
    }
    return new XYPlot(data, null, new NumberAxis("requests/s"), renderer);
  }

  private static XYPlot replicaPanel(Figure f) {
    Map<String, XYSeries> byStageAndKind = new TreeMap<>();
    for (PlannerReplicas.Sample s : f.replicas()) {
      String key = s.stage() + (s.kind().isEmpty() ? "" : " " + s.kind());
      byStageAndKind.computeIfAbsent(key, k -> new XYSeries(k, false)).add(s.seconds(), s.replicas());
    }
    var data = new XYSeriesCollection();
    byStageAndKind.values().forEach(data::addSeries);
    XYItemRenderer renderer = new XYStepRenderer();
    List<String> stages = f.replicas().stream().map(PlannerReplicas.Sample::stage).distinct().sorted().toList();
    for (int i = 0; i < data.getSeriesCount(); i++) { // a colour per stage; desired dashed, actual solid
      String key = data.getSeriesKey(i).toString();
      int stage = stages.indexOf(key.substring(0, key.indexOf(' ') < 0 ? key.length() : key.indexOf(' ')));
      renderer.setSeriesPaint(i, STAGE_COLORS[Math.max(0, stage) % STAGE_COLORS.length]);
      renderer.setSeriesStroke(i, key.endsWith(" desired") ? DASHED : new BasicStroke(2.5f));
    }
    var axis = new NumberAxis("replicas");
    axis.setStandardTickUnits(NumberAxis.createIntegerTickUnits());
    axis.setAutoRangeIncludesZero(true);
    return new XYPlot(data, null, axis, renderer);
  }

  /** A figure per window, at the window's middle; NaN (no requests there) leaves a gap. */
  private static XYSeries windowSeries(Figure f, String name, ToDoubleFunction<Timeline.Window> y) {
    var series = new XYSeries(name, false);
    for (Timeline.Window w : f.timeline().windows()) {
      double v = y.applyAsDouble(w);
      series.add(w.startSeconds() + w.seconds() / 2, Double.isNaN(v) ? null : v);
    }
    return series;
  }

  /** Points → a staircase: each value holds until the next point's time. */
  private static XYSeries stepped(XYSeries points) {
    var steps = new XYSeries(points.getKey(), false);
    for (int i = 0; i < points.getItemCount(); i++) {
      if (i > 0) steps.add(points.getX(i), points.getY(i - 1));
      steps.add(points.getX(i), points.getY(i));
    }
    return steps;
  }
}
