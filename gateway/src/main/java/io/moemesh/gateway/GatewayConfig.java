package io.moemesh.gateway;

import io.moemesh.tokenizer.ChatEncoder;

import io.quarkus.runtime.configuration.MemorySize;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/** Settings of the gateway ({@code moemesh.gateway.*}). */
@ConfigMapping(prefix = "moemesh.gateway")
public interface GatewayConfig {

  /** Model directory holding {@code config.json}, {@code tokenizer.json} and {@code tokenizer_config.json}. */
  Path modelDir();

  /** The model id clients send as {@code model} and {@code /v1/models} lists; default: the directory's name. */
  Optional<String> servedModelName();

  /**
   * What special-token text inside chat messages (e.g. {@code <｜Assistant｜>} typed by a user) becomes: {@code text}
   * (plain text, so no client can forge a role marker) or {@code parse} (special ids, as the template's own markers).
   */
  @WithDefault("text")
  ChatEncoder.SpecialTokens specialTokensInContent();

  /** Keys accepted as {@code Authorization: Bearer <key>}; none configured = no authentication. */
  Optional<List<String>> apiKeys();

  /**
   * True: Prefill on a prefill replica, then Generate with the KV ticket on a decode replica. False (or no
   * reachable prefill replica): Generate without a ticket, so the decode replica computes the prompt itself.
   */
  @WithDefault("true")
  boolean disaggregation();

  /** The prefill replicas. */
  Pool prefill();

  /** The decode replicas. */
  Pool decode();

  /** Deadline of one Prefill call. */
  @WithDefault("60s")
  Duration prefillDeadline();

  /** Deadline of one Generate stream, i.e. of a whole generation. */
  @WithDefault("10m")
  Duration decodeDeadline();

  /**
   * How many other replicas a leg (prefill, or decode before its first token) tries after one answered
   * UNAVAILABLE; a choice whose decode leg already streamed tokens migrates instead ({@link #maxMigrations()}).
   */
  @WithDefault("2")
  int unavailableRetries();

  /**
   * How many times one choice may move to another decode replica after tokens went out (its replica died, drained or
   * broke the stream): the prompt and the tokens delivered are computed again there and the stream goes on. 0 = never.
   */
  @WithDefault("2")
  int maxMigrations();

  /** How often every replica's {@code Load} is polled for routing and readiness. */
  @WithDefault("200ms")
  Duration loadPollInterval();

  /** How often {@code dns:///name:port} replica entries are resolved again (pods come and go). */
  @WithDefault("5s")
  Duration discoveryInterval();

  /** Deadline of one {@code Load} call; a replica that misses it counts as unreachable until it answers again. */
  @WithDefault("1s")
  Duration loadTimeout();

  /**
   * Generations (a request's prompts × {@code n}) in flight at once; above it the gateway answers 429 with
   * {@code Retry-After}.
   */
  @WithDefault("256")
  int maxInFlight();

  /**
   * Longest wait for the prompts already queued (at the rate the mesh has been computing them) that a new request
   * is admitted into; beyond it the gateway answers 429 at once, with {@code Retry-After} the excess.
   */
  @WithDefault("30s")
  Duration maxQueueWait();

  /** A stream with nothing to send for this long gets a {@code : keep-alive} comment (proxies' idle timeouts). */
  @WithDefault("10s")
  Duration sseKeepAlive();

  /** The {@code Retry-After} sent with 429 and 503 answers (at least). */
  @WithDefault("1s")
  Duration retryAfter();

  /** Largest {@code n} (choices per prompt) a request may ask for. */
  @WithDefault("16")
  int maxN();

  /**
   * Largest number of generations one request may start (prompts × {@code n}); each counts as one of
   * {@link #maxInFlight()}, so a batch of prompts cannot slip past admission as one request.
   */
  @WithDefault("64")
  int maxChoices();

  /** Largest request body accepted. */
  @WithDefault("4M")
  MemorySize maxBodySize();

  /**
   * Longest request URI (path and query) accepted; a longer one is a 414 in OpenAI's shape. Keep it well below
   * {@code quarkus.http.limits.max-initial-line-length}, past which Netty answers 414 with no body.
   */
  @WithDefault("4096")
  int maxUriLength();

  /**
   * Largest request header block accepted; a larger one is a 431 in OpenAI's shape. Keep it well below
   * {@code quarkus.http.limits.max-header-size}, past which Netty answers 431 with no body.
   */
  @WithDefault("20K")
  MemorySize maxHeaderSize();

  /** Cache-aware prefill routing ({@link PrefixAffinity}). */
  PrefixRouting prefixRouting();

  interface PrefixRouting {
    /** Tokens per prefix block: the engines' KV page size ({@code moemesh.engine.page-size}). */
    @WithDefault("16")
    int blockTokens();

    /** Prefix blocks remembered per prefill replica, least recently used dropped first (65536 × 16 = 1 M tokens). */
    @WithDefault("65536")
    int blocksPerReplica();

    /**
     * Prompt tokens a replica may have queued beyond the least-queued one and still get a prompt for the prefix it
     * holds; 0 = a prefix only breaks ties of load.
     */
    @WithDefault("8192")
    long maxImbalance();
  }

  /** A group of replicas of one role. */
  interface Pool {
    /**
     * The replicas' gRPC servers: {@code host:port} each, or {@code dns:///name:port} for every address the name
     * resolves to (a Kubernetes headless Service: one per pod); none = the role is absent.
     */
    Optional<List<String>> replicas();
  }
}
