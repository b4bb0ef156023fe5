package io.moemesh.planner.observe;

/** The engine series the planner reads (engine-host's EngineMetrics; docs/architecture.md, "Observability"). */
final class EngineSeries {
  private EngineSeries() {}

  static final String RUNNING = "vllm:num_requests_running";
  static final String WAITING = "vllm:num_requests_waiting";
  static final String KV_USAGE = "vllm:kv_cache_usage_perc";
  static final String QUEUED_PROMPT_TOKENS = "moemesh_engine_queued_prompt_tokens";
  static final String PROMPT_TOKENS = "vllm:prompt_tokens_total";
  static final String GENERATION_TOKENS = "vllm:generation_tokens_total";
  static final String REQUEST_SUCCESS = "vllm:request_success_total";
  static final String TTFT = "vllm:time_to_first_token_seconds";
  static final String ITL = "vllm:inter_token_latency_seconds";
}
