# shellcheck shell=bash
# Shared by the bench/*-vs-*.sh comparisons. The caller sets ROOT, URL, OUT and WORKLOADS ("name:bench serve options").

# run_shape NAME UP_OPTIONS...: brings the mesh up with those options, runs every workload into
# $OUT/NAME-WORKLOAD.json, and brings it down (also when a workload fails).
run_shape() {
  local shape=$1 w
  shift
  "$ROOT/bin/moemesh" up "$@" --detach
  trap '"$ROOT/bin/moemesh" down' EXIT
  for w in "${WORKLOADS[@]}"; do
    # shellcheck disable=SC2086 # the options are words
    "$ROOT/bin/moemesh" bench serve --url "$URL" ${w#*:} --json "$OUT/$shape-${w%%:*}.json"
  done
  "$ROOT/bin/moemesh" down
  trap - EXIT
}

# One figure of one run, from the pretty-printed JSON ("key" : value,).
figure() { awk -v k="\"$2\"" '$1 == k { gsub(/,/, "", $3); print $3 }' "$OUT/$1.json"; }
ratio() { awk -v m="$1" -v s="$2" 'BEGIN { printf "%.2f", m / s }'; }
