#!/usr/bin/env bash
# The mesh against one engine process on the same cores (docs/performance.md, "Serving: the mesh against one
# process"): the same `bench serve` workloads through the gateway of `bin/moemesh up --single` (one decode process
# that computes the prompts itself) and of `bin/moemesh up --decode-replicas 1 --routed-shards 0` (prefill +
# kv-store + one decode replica, experts inside the engines; `up` gives the prefill engine every core and the decode
# replica its share), then the ratios mesh / single.
#
#   bench/serve-vs-single.sh [OUT_DIR]      (default docs/bench/serve; MOEMESH_HOME as for bin/moemesh)
#
# SINGLE_UP and MESH_UP replace the `up` options of each shape, e.g. SINGLE_UP='--single --threads 1'.
#
# Run it on a quiet machine: nothing else may use the cores or the mesh's ports (8000, 9200-9401).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/docs/bench/serve}
URL=http://localhost:8000
mkdir -p "$OUT"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# workload name and bench serve options: TPOT alone, TTFT of 2,000-token prompts, throughput at 8 and 32 in flight
WORKLOADS=(
  "c1:--concurrency 1 --num-prompts 16 --input-len 256 --output-len 128 --warmup 4"
  "ttft2000:--concurrency 1 --num-prompts 8 --input-len 2000 --output-len 16 --warmup 2"
  "c8:--concurrency 8 --num-prompts 32 --input-len 256 --output-len 128"
  "c32:--concurrency 32 --num-prompts 64 --input-len 256 --output-len 128"
)

for shape in single mesh; do
  if [[ $shape == single ]]; then up=${SINGLE_UP:---single}; else up=${MESH_UP:---decode-replicas 1 --routed-shards 0}; fi
  # shellcheck disable=SC2086 # the options are words
  run_shape "$shape" $up
done

printf '\n%-34s %10s %10s %8s\n' "figure" "single" "mesh" "ratio"
row() { # workload key label
  local s m
  s=$(figure "single-$1" "$2"); m=$(figure "mesh-$1" "$2")
  printf '%-34s %10.1f %10.1f %8s\n' "$3" "$s" "$m" "$(ratio "$m" "$s")"
}
row c1 median_tpot_ms "c=1 TPOT p50 (ms)"
row c1 median_ttft_ms "c=1 TTFT p50, 256 tokens (ms)"
row ttft2000 median_ttft_ms "TTFT p50, 2000 tokens (ms)"
row c8 output_throughput "c=8 output tok/s"
row c8 median_tpot_ms "c=8 TPOT p50 (ms)"
row c32 output_throughput "c=32 output tok/s"
row c32 median_tpot_ms "c=32 TPOT p50 (ms)"
