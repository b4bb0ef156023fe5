package io.moemesh.cli;

import io.moemesh.model.Precision;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

/**
 * {@code up}'s command line. {@code bin/moemesh up} starts the mesh's processes itself (bin/lib/mesh.sh); this command
 * reads and checks its options and resolves the defaults that depend on others (the decode replicas with
 * {@code --planner}, where the shared experts go, {@code --single}), and hands them to the script as shell assignments
 * ({@code --settings-out FILE}, else stdout). {@code --help} prints the usage and writes no settings.
 */
@Command(name = "up", sortOptions = false, sortSynopsis = false, description = {
    "The mesh as local processes: N kv-stores, N prefill replicas (prompts routed by prefix), N decode replicas, the routed"
        + " experts on N expert shards with R redundant slots, rebalanced by shard 0 every D, the shared experts on their own"
        + " service or in the engines, and the OpenAI-compatible gateway on http://H:P/v1 (internal services on 127.0.0.1"
        + " only), on the trained demo model (models/demo) unless --model. Builds what is missing; Ctrl-C stops it all, or"
        + " --detach and then `bin/moemesh down`. Kernel threads: each prefill engine every core, the decode replicas a share"
        + " each (at least 1); --threads T sets them all."})
final class UpCommand implements Callable<Integer> {
  /** Where the shared experts run. */
  enum SharedExperts { LOCAL, REMOTE }

  /** Replica {@code i} serves on base + 10·i: a tenth prefill replica would take decode-0's ports, a tenth decode kv-store-0's. */
  static final int MAX_REPLICAS = 9;

  @Mixin HelpOption help;
  @Spec CommandSpec spec;

  @Option(names = "--model", paramLabel = "DIR", description = "The checkpoint directory (default: models/demo).")
  Path model;

  @Option(names = "--decode-replicas", paramLabel = "N", description = "Decode replicas (default: 2; with --planner, its minimum: 1).")
  Integer decodeReplicas;

  @Option(names = "--prefill-replicas", paramLabel = "N", description = "Prefill replicas, 1 to 9 (default: ${DEFAULT-VALUE}; with"
      + " --planner, its minimum).")
  int prefillReplicas = 1;

  @Option(names = "--kv-stores", paramLabel = "N", description = "KV stores, 1 to 9 (default: ${DEFAULT-VALUE}).")
  int kvStores = 1;

  @Option(names = "--port", paramLabel = "P", description = "The gateway's port (default: ${DEFAULT-VALUE}).")
  int port = 8000;

  @Option(names = "--host", paramLabel = "H", description = "The gateway's address, e.g. 0.0.0.0 (default: ${DEFAULT-VALUE}).")
  String host = "127.0.0.1";

  @Option(names = "--precision", paramLabel = "exact|bf16|int8", description = "The weights' precision (default: int8).")
  Precision precision = Precision.INT8;

  @Option(names = "--threads", paramLabel = "T", description = "Kernel threads of every engine (default: see above).")
  Integer threads;

  @Option(names = "--single", description = "The same gateway on one engine process (a decode replica with every core and its"
      + " experts inside, that computes the prompts itself; no prefill, kv-store or expert services): the baseline the mesh"
      + " is measured against.")
  boolean single;

  @Option(names = "--detach", description = "Leave the mesh running in the background; `bin/moemesh down` stops it.")
  boolean detach;

  @Option(names = "--routed-shards", paramLabel = "N", description = "Expert shards for the routed experts (default:"
      + " ${DEFAULT-VALUE}; 0 = inside the engines).")
  int routedShards = 2;

  @Option(names = "--shared-experts", paramLabel = "local|remote", description = "The shared experts on their own service"
      + " (remote; the default with shards) or in the engines (local; the default without).")
  SharedExperts sharedExperts;

  @Option(names = "--redundant-slots", paramLabel = "R", description = "Redundant expert slots (default: ${DEFAULT-VALUE}).")
  int redundantSlots = 2;

  @Option(names = "--balance-every", paramLabel = "D", converter = MeshDuration.class, defaultValue = "60s",
      description = "How often shard 0 rebalances the experts: a whole number of ms, s (the default unit), m or h"
          + " (default: ${DEFAULT-VALUE}; 0 = never).")
  Duration balanceEvery;

  @Option(names = "--speculative-tokens", paramLabel = "K", description = "MTP speculative decoding, K drafts per request and step"
      + " from the model's MTP module (default: ${DEFAULT-VALUE} = off; DeepSeek serves with 1); the prefills hand the first"
      + " draft to decode.")
  int speculativeTokens = 0;

  @Option(names = "--speculative-draft-vocabulary", paramLabel = "N", description = "The MTP head drafts over the first N token ids"
      + " only (FR-Spec: the most frequent in byte-level BPE), reading N / vocabulary of its weights (default: ${DEFAULT-VALUE} = all).")
  int draftVocabulary = 0;

  @Option(names = "--planner", description = "The SLA planner (docs/planner.md) starts and stops the prefill and decode replicas to"
      + " hold the p90 TTFT and ITL targets, between the --prefill-replicas/--decode-replicas counts and --max-replicas, with"
      + " the capacities in the --profile; its other settings from MOEMESH_PLANNER_* (e.g. MOEMESH_PLANNER_SCALE_DOWN_COOLDOWN=30s).")
  boolean planner;

  @Option(names = "--ttft-target", paramLabel = "MS", description = "The planner's p90 TTFT target (default: ${DEFAULT-VALUE}).")
  int ttftTarget = 500;

  @Option(names = "--itl-target", paramLabel = "MS", description = "The planner's p90 ITL target (default: ${DEFAULT-VALUE}).")
  int itlTarget = 50;

  @Option(names = "--max-replicas", paramLabel = "N", description = "The planner's most replicas per stage, 1 to 9 (default: ${DEFAULT-VALUE}).")
  int maxReplicas = 2;

  @Option(names = "--profile", paramLabel = "FILE", description = "The planner's capacities (default:"
      + " planner/profiles/demo-zen3-avx2-2cores.json; `bin/moemesh bench profile` measures one).")
  Path profile;

  @Option(names = "--settings-out", hidden = true, paramLabel = "FILE", description = "Where bin/moemesh reads the settings.")
  Path settingsOut;

  /** The settings bin/lib/mesh.sh starts the mesh with, by its variable names; optional ones are empty when not given. */
  Map<String, String> settings() {
    int decode = decodeReplicas != null ? decodeReplicas : planner ? 1 : 2;
    if (decode < 1) throw Cli.usageError(spec, "--decode-replicas must be a positive number, got " + decode);
    between("--prefill-replicas", prefillReplicas, 1, MAX_REPLICAS);
    between("--kv-stores", kvStores, 1, MAX_REPLICAS);
    between("--port", port, 0, 65535);
    if (threads != null) Cli.atLeast(spec, "--threads", threads, 1);
    Cli.atLeast(spec, "--routed-shards", routedShards, 0);
    Cli.atLeast(spec, "--redundant-slots", redundantSlots, 0);
    Cli.atLeast(spec, "--speculative-tokens", speculativeTokens, 0);
    Cli.atLeast(spec, "--speculative-draft-vocabulary", draftVocabulary, 0);
    if (planner) {
      if (single) throw Cli.usageError(spec, "--planner sizes the prefill and decode stages; --single has neither");
      Cli.atLeast(spec, "--ttft-target", ttftTarget, 1);
      Cli.atLeast(spec, "--itl-target", itlTarget, 1);
      between("--max-replicas", maxReplicas, 1, MAX_REPLICAS);
      if (decode > maxReplicas || prefillReplicas > maxReplicas)
        throw Cli.usageError(spec, "--decode-replicas and --prefill-replicas (the planner's minimum) must not exceed --max-replicas " + maxReplicas);
    }
    int shards = routedShards;
    SharedExperts shared = sharedExperts != null ? sharedExperts : shards > 0 ? SharedExperts.REMOTE : SharedExperts.LOCAL;
    if (single) { // one engine process with its experts inside it
      decode = 1;
      shards = 0;
      shared = SharedExperts.LOCAL;
    }
    if (shards == 0 && shared == SharedExperts.REMOTE) throw Cli.usageError(spec, "--shared-experts remote needs --routed-shards ≥ 1");

    Map<String, String> s = new LinkedHashMap<>();
    s.put("model", model == null ? "" : model.toString());
    s.put("replicas", String.valueOf(decode));
    s.put("prefills", String.valueOf(prefillReplicas));
    s.put("stores", String.valueOf(kvStores));
    s.put("port", String.valueOf(port));
    s.put("host", host);
    s.put("precision", precision.name().toLowerCase(Locale.ROOT));
    s.put("threads", threads == null ? "" : String.valueOf(threads));
    s.put("shards", String.valueOf(shards));
    s.put("shared", shared.name().toLowerCase(Locale.ROOT));
    s.put("redundant", String.valueOf(redundantSlots));
    s.put("balance", MeshDuration.format(balanceEvery));
    s.put("speculative", String.valueOf(speculativeTokens));
    s.put("draft_vocabulary", String.valueOf(draftVocabulary));
    s.put("planner", planner ? "1" : "0");
    s.put("ttft", String.valueOf(ttftTarget));
    s.put("itl", String.valueOf(itlTarget));
    s.put("max_replicas", String.valueOf(maxReplicas));
    s.put("profile", profile == null ? "" : profile.toAbsolutePath().toString());
    s.put("single", single ? "1" : "0");
    s.put("detach", detach ? "1" : "0");
    return s;
  }

  @Override
  public Integer call() throws IOException {
    StringBuilder shell = new StringBuilder();
    settings().forEach((name, value) -> shell.append(name).append('=').append(shellQuoted(value)).append('\n'));
    if (settingsOut != null) Files.writeString(settingsOut, shell);
    else System.out.print(shell);
    return 0;
  }

  private void between(String name, int value, int min, int max) {
    if (value < min || value > max) throw Cli.usageError(spec, name + " must be " + min + " to " + max + ", got " + value);
  }

  /** A POSIX shell word that is exactly {@code value}. */
  static String shellQuoted(String value) {
    return "'" + value.replace("'", "'\\''") + "'";
  }

  /** A duration as the services' configuration takes it: a whole number and ms, s, m or h ({@code 0}: off). */
  static final class MeshDuration implements ITypeConverter<Duration> {
    private static final Pattern SYNTAX = Pattern.compile("(\\d{1,9})(ms|s|m|h)?");

    @Override
    public Duration convert(String value) {
      Matcher m = SYNTAX.matcher(value.strip());
      if (!m.matches()) throw new TypeConversionException("must be a duration such as 60s, 500ms or 0, got '" + value + "'");
      long n = Long.parseLong(m.group(1));
      String unit = m.group(2);
      return switch (unit == null ? "s" : unit) { // a bare number is seconds, as the services read it
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        default -> Duration.ofHours(n);
      };
    }

    /** {@code d} in that syntax: whole seconds as {@code 60s}, else milliseconds. */
    static String format(Duration d) {
      long ms = d.toMillis();
      if (ms == 0) return "0";
      return ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
    }
  }
}
