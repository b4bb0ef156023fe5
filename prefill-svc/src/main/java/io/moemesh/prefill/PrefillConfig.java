package io.moemesh.prefill;

import io.moemesh.enginehost.ConfigConverters.Positive;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithConverter;
import io.smallrye.config.WithDefault;
import java.time.Duration;

/** prefill-svc's own settings ({@code moemesh.prefill.*}, listed in docs/configuration.md); the engine's are engine-host's. */
@ConfigMapping(prefix = "moemesh.prefill")
public interface PrefillConfig {
  /** The kv-stores, {@code host:port[,host:port…]}: each prompt's KV goes to the one with the most free memory. */
  String kvStore();

  /** How long a stored object waits for its decode replica. */
  @WithDefault("30s")
  Duration kvLease();

  /** How often the stores' free memory is asked. */
  @WithDefault("1s")
  Duration kvStorePoll();

  /** Reading prompt prefixes the stores already hold. */
  StoredPrefix storedPrefix();

  /** How long prompts in flight may go on once a drain starts (SIGTERM, or a Drain call without a timeout). */
  @WithDefault("30s")
  Duration drainTimeout();

  /** {@code moemesh.prefill.stored-prefix.*}. */
  interface StoredPrefix {
    /** Whether prompts look for their prefix in the stores before computing it. */
    @WithDefault("true")
    boolean enabled();

    /** The shortest stored prefix worth reading instead of computing. */
    @WithDefault("32")
    @WithConverter(Positive.class)
    int minTokens();

    /** How long a prompt waits for the stores' LookupPrefix answers (a late store counts as holding nothing). */
    @WithDefault("100ms")
    Duration lookupTimeout();
  }
}
