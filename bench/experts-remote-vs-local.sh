#!/usr/bin/env bash
# Remote experts against in-process experts (docs/performance.md, "Serving: expert services"): the same
# `bench serve` workloads through `bin/moemesh up --decode-replicas 1` with the decode replica's experts inside
# it (--routed-shards 0), on 2 routed shards + a shared-expert service, and on those with micro-batch overlap
# (steps of at least 16 tokens as two overlapped micro-batches); then the ratios to in-process experts.
#
#   bench/experts-remote-vs-local.sh [OUT_DIR]      (default docs/bench/experts; MOEMESH_HOME as for bin/moemesh)
#
# Run it on a quiet machine: nothing else may use the cores or the mesh's ports (8000, 9200-9601).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/docs/bench/experts}
URL=http://localhost:8000
mkdir -p "$OUT"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

WORKLOADS=(
  "c1:--concurrency 1 --num-prompts 16 --input-len 256 --output-len 64 --warmup 4"
  "c32:--concurrency 32 --num-prompts 64 --input-len 256 --output-len 64"
)
SHAPES=(
  "local:--decode-replicas 1 --routed-shards 0 --shared-experts local:"
  "remote:--decode-replicas 1 --routed-shards 2 --shared-experts remote:"
  "overlap:--decode-replicas 1 --routed-shards 2 --shared-experts remote:-Dmoemesh.engine.micro-batch-threshold=16"
)

for s in "${SHAPES[@]}"; do
  IFS=: read -r shape up jvm <<<"$s"
  # shellcheck disable=SC2086 # the options are words
  MOEMESH_JAVA_OPTS="${MOEMESH_JAVA_OPTS:-} $jvm" run_shape "$shape" $up
done

printf '\n%-26s %9s %9s %9s %8s %8s\n' "figure" "local" "remote" "overlap" "remote/" "overlap/"
row() { # workload key label
  local l r o
  l=$(figure "local-$1" "$2"); r=$(figure "remote-$1" "$2"); o=$(figure "overlap-$1" "$2")
  printf '%-26s %9.1f %9.1f %9.1f %8s %8s\n' "$3" "$l" "$r" "$o" "$(ratio "$r" "$l")" "$(ratio "$o" "$l")"
}
row c1 median_tpot_ms "c=1 TPOT p50 (ms)"
row c1 output_throughput "c=1 output tok/s"
row c32 median_tpot_ms "c=32 TPOT p50 (ms)"
row c32 output_throughput "c=32 output tok/s"
