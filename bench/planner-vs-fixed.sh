#!/usr/bin/env bash
# The SLA planner against fixed replicas under the same ramp (docs/planner.md, "The planner against fixed replicas"):
# one `bench serve --ramp` through the gateway of `bin/moemesh up --decode-replicas 1 --routed-shards 0` (one prefill
# and one decode replica, fixed) and of `bin/moemesh up --planner --routed-shards 0` (1 to 2 replicas per stage, the
# planner's local connector), then goodput and latency per phase side by side, and the planner's replica counts.
#
#   bench/planner-vs-fixed.sh [OUT_DIR]      (default docs/bench/planner; MOEMESH_HOME as for bin/moemesh)
#
# RAMP (rate:seconds,...), SERVE (more bench serve options) and PLANNER_UP (more up options, e.g. --profile FILE)
# change the run; MOEMESH_PLANNER_* the planner's settings (here interval 5 s, cool-downs 15 s up and 30 s down).
# Run it on a quiet machine: nothing else may use the cores or the mesh's ports (8000, 9200-9401, 9700).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/docs/bench/planner}
URL=http://localhost:8000
mkdir -p "$OUT"
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
export MOEMESH_PLANNER_INTERVAL=${MOEMESH_PLANNER_INTERVAL:-5s}
export MOEMESH_PLANNER_SCALE_UP_COOLDOWN=${MOEMESH_PLANNER_SCALE_UP_COOLDOWN:-15s}
export MOEMESH_PLANNER_SCALE_DOWN_COOLDOWN=${MOEMESH_PLANNER_SCALE_DOWN_COOLDOWN:-30s}
RAMP=${RAMP:-1:30,12:60,1:60}
SERVE="--ramp $RAMP --input-len 256 --output-len 64 --warmup 4 --seed 1 --goodput ttft:500 tpot:50 ${SERVE:-}"

WORKLOADS=("ramp:$SERVE")
run_shape fixed --decode-replicas 1 --routed-shards 0
WORKLOADS=("ramp:$SERVE --planner-metrics http://localhost:9700/q/metrics")
# shellcheck disable=SC2086 # the options are words
run_shape planner --planner --routed-shards 0 ${PLANNER_UP:-}

echo
jq -r -n --slurpfile f "$OUT/fixed-ramp.json" --slurpfile p "$OUT/planner-ramp.json" '
  "phase  offered   goodput fixed / planner   good % fixed / planner   TTFT p90 ms fixed / planner   TPOT p90 ms fixed / planner",
  ([$f[0].phases, $p[0].phases] | transpose | to_entries[] | .key as $i | .value as [$a, $b] |
    "\($i + 1)      \($a.offered_rate)       \($a.goodput * 100 | round / 100) / \($b.goodput * 100 | round / 100)"
    + "             \(if $a.sent > 0 then $a.sent_good * 100 / $a.sent | round else 0 end) / \(if $b.sent > 0 then $b.sent_good * 100 / $b.sent | round else 0 end)"
    + "                   \($a.p90_ttft_ms | round) / \($b.p90_ttft_ms | round)"
    + "                     \($a.p90_tpot_ms * 10 | round / 10) / \($b.p90_tpot_ms * 10 | round / 10)"),
  "overall goodput (req/s): fixed \($f[0].request_goodput * 100 | round / 100), planner \($p[0].request_goodput * 100 | round / 100); failed: \($f[0].failed) / \($p[0].failed)",
  "planner decode replicas (actual) over time: " + ([$p[0].planner_replicas[] | select(.stage == "decode" and .kind == "actual")]
    | reduce .[] as $s ([]; if length == 0 or .[-1].replicas != $s.replicas then . + [$s] else . end)
    | map("\(.replicas) from \(.t | round) s") | join(", "))'
