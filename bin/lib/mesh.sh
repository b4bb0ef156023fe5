# shellcheck shell=bash
# `bin/moemesh up` and `down`: the mesh as local processes (sourced by bin/moemesh, which defines ROOT,
# ensure_built, run_main and cmd_offline).
#
#   kv-store #i     HTTP 9400+10i  gRPC 9401+10i
#   prefill-svc #i  HTTP 9200+10i  gRPC 9201+10i
#   decode-svc #i   HTTP 9300+10i  gRPC 9301+10i
#   expert-svc routed shard #i   HTTP 9500+10i  gRPC 9501+10i   (shard 0 also runs the balancer)
#   expert-svc shared            HTTP 9600      gRPC 9601
#   planner         HTTP 9700      (up --planner: it starts and stops the prefill and decode replicas above)
#   gateway         HTTP --port (8000)
#
# `up --single` is the same model served by one engine process instead: one decode replica with every core, which
# computes the prompt itself (gateway moemesh.gateway.disaggregation=false), and no prefill or kv-store — the
# baseline the mesh is measured against (docs/performance.md, "Serving: the mesh against one process").
#
# Internal services listen on 127.0.0.1 only, and every internal gRPC call carries credentials made with a fresh
# key in $MOEMESH_HOME/run/mesh.key (docs/reliability.md, "Internal services"); the gateway listens on --host.
#
# A mesh in the foreground goes with this shell however it ends: Ctrl-C or SIGTERM stops it (stop_mesh), and each
# service gets MOEMESH_LAUNCHER_PID=$$, so that after a kill -9 of the shell, which runs no trap, the services see it
# gone and stop as on SIGTERM (the lifecycle module's LauncherLifeline); the planner's replicas watch the planner the
# same way. `up --detach` sets no launcher: that mesh runs until `down`.
#
# Logs: $MOEMESH_HOME/logs/<start time>/<service>.log. `up --detach` leaves the mesh running and records its
# processes in $MOEMESH_HOME/run/mesh.pids for `down`.

MESH_PIDS=()
MESH_NAMES=()
MESH_PORTS=()
MESH_COMMON=() # properties every service gets: the mesh key
MESH_LAUNCHER=() # the environment every service gets in the foreground: this shell's pid, whose loss stops them
MESH_OWNED_NAMES=() # replicas the planner starts and stops (up --planner): awaited, not stopped by us
MESH_OWNED_PORTS=()

mesh_home() { echo "${MOEMESH_HOME:-$HOME/.cache/moemesh}"; }

# service_command MODULE HTTP_PORT PROPERTY...: the command line of the module's packaged Quarkus app, one argument
# a line (the planner's launch files hold it with {httpPort} and {grpcPort} in place of the ports).
service_command() {
  local module=$1 http=$2 p opts=()
  shift 2
  read -r -a opts <<<"${MOEMESH_JAVA_OPTS:-}"
  printf '%s\n' "$JAVA_HOME/bin/java" "${MOEMESH_JVM_ARGS[@]}" "${opts[@]}" "-Dquarkus.http.port=$http"
  for p in "${MESH_COMMON[@]}" "$@"; do printf '%s\n' "-D$p"; done
  printf '%s\n' -jar "$ROOT/$module/target/quarkus-app/quarkus-run.jar"
}

# start_service NAME MODULE HTTP_PORT PROPERTY...: the module's packaged Quarkus app in the background.
start_service() {
  local name=$1 module=$2 http=$3 cmd=()
  shift 3
  mapfile -t cmd < <(service_command "$module" "$http" "$@")
  env "${MESH_LAUNCHER[@]}" "${cmd[@]}" >"$MESH_LOGS/$name.log" 2>&1 &
  MESH_PIDS+=($!)
  MESH_NAMES+=("$name")
  MESH_PORTS+=("$http")
}

# stop_with_this_shell: the services started from now on stop when this shell is gone, even after a kill -9 of it.
stop_with_this_shell() {
  MESH_LAUNCHER=("MOEMESH_LAUNCHER_PID=$$")
}

# await_owned NAME HTTP_PORT: a replica the planner starts (up --planner), waited for by await_mesh but not ours to stop.
await_owned() {
  MESH_OWNED_NAMES+=("$1")
  MESH_OWNED_PORTS+=("$2")
}

stop_mesh() {
  local pid
  ((${#MESH_PIDS[@]})) || return 0
  echo "moemesh: stopping ${MESH_NAMES[*]}" >&2
  for pid in "${MESH_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${MESH_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  MESH_PIDS=()
  rm -f "$(mesh_home)/run/mesh.key" # a new one for the next mesh
}

# Polls every service's /q/health/ready; a service that exits or is not ready in time fails the start.
await_mesh() {
  local deadline=$((SECONDS + ${MOEMESH_READY_TIMEOUT:-300})) i ready
  while ((SECONDS < deadline)); do
    ready=0
    for i in "${!MESH_PIDS[@]}"; do
      if ! kill -0 "${MESH_PIDS[$i]}" 2>/dev/null; then
        echo "moemesh: ${MESH_NAMES[$i]} exited; the end of $MESH_LOGS/${MESH_NAMES[$i]}.log:" >&2
        tail -n 30 "$MESH_LOGS/${MESH_NAMES[$i]}.log" >&2
        return 1
      fi
      curl -fs -o /dev/null "http://localhost:${MESH_PORTS[$i]}/q/health/ready" && ready=$((ready + 1))
    done
    for i in "${!MESH_OWNED_PORTS[@]}"; do
      curl -fs -o /dev/null "http://localhost:${MESH_OWNED_PORTS[$i]}/q/health/ready" && ready=$((ready + 1))
    done
    local total=$((${#MESH_PIDS[@]} + ${#MESH_OWNED_PORTS[@]}))
    printf '\rmoemesh: %d of %d services ready' "$ready" "$total" >&2
    ((ready == total)) && { echo >&2; return 0; }
    sleep 1
  done
  echo >&2
  echo "moemesh: not every service was ready within ${MOEMESH_READY_TIMEOUT:-300} s (logs in $MESH_LOGS)" >&2
  for i in "${!MESH_OWNED_PORTS[@]}"; do # the planner's replicas: their logs are beside the others
    curl -fs -o /dev/null "http://localhost:${MESH_OWNED_PORTS[$i]}/q/health/ready" \
      || echo "moemesh: ${MESH_OWNED_NAMES[$i]} (started by the planner) is not ready: $MESH_LOGS/${MESH_OWNED_NAMES[$i]}.log" >&2
  done
  return 1
}

# start_planner TTFT_MS ITL_MS PROFILE MIN_PREFILL MIN_DECODE MAX: the planner with the local connector, which starts
# the prefill and decode replicas from $MESH_LOGS/{prefill,decode}.launch and stops them when it stops. Its other
# settings (interval, cool-downs, ...) come from MOEMESH_PLANNER_* in the environment (docs/planner.md).
start_planner() {
  local MESH_COMMON=(quarkus.http.host=127.0.0.1) # no gRPC, no mesh key: it scrapes /q/metrics and starts processes
  start_service planner planner 9700 moemesh.planner.connector=local "moemesh.planner.ttft-target=$1ms" \
    "moemesh.planner.itl-target=$2ms" "moemesh.planner.profile=$3" "moemesh.planner.local.log-dir=$MESH_LOGS" \
    "moemesh.planner.local.prefill-launch=$MESH_LOGS/prefill.launch" "moemesh.planner.local.decode-launch=$MESH_LOGS/decode.launch" \
    "moemesh.planner.prefill.min-replicas=$4" "moemesh.planner.decode.min-replicas=$5" \
    "moemesh.planner.prefill.max-replicas=$6" "moemesh.planner.decode.max-replicas=$6"
}

cmd_up() {
  local model replicas prefills stores port host precision threads shards shared redundant balance speculative draft_vocabulary
  local planner ttft itl max_replicas profile single detach settings opts=()
  moemesh_use_java
  ensure_built cli
  # The options are read, checked and resolved (defaults that depend on others) by the picocli command
  # io.moemesh.cli.UpCommand, which hands them back as shell assignments; --help prints its usage and writes none.
  settings=$(mktemp)
  read -r -a opts <<<"${MOEMESH_JAVA_OPTS:-}"
  "$JAVA_HOME/bin/java" "${MOEMESH_JVM_ARGS[@]}" "${opts[@]}" -cp "$ROOT/cli/target/classes:$ROOT/cli/target/lib/*" \
    io.moemesh.cli.Main up --settings-out "$settings" "$@" || { local rc=$?; rm -f "$settings"; exit "$rc"; }
  if [[ ! -s $settings ]]; then rm -f "$settings"; return 0; fi
  # shellcheck source=/dev/null
  source "$settings"
  rm -f "$settings"
  [[ -n $model ]] || model="$ROOT/models/demo" # the trained demo model in the repository
  [[ -n $profile ]] || profile="$ROOT/planner/profiles/demo-zen3-avx2-2cores.json"
  if ((planner)); then
    [[ -f $profile ]] || { echo "moemesh: no planner profile at $profile" >&2; exit 1; }
    profile=$(cd "$(dirname "$profile")" && pwd)/$(basename "$profile")
  fi
  local pids_file
  pids_file="$(mesh_home)/run/mesh.pids"
  [[ -f $pids_file ]] && { echo "moemesh: a mesh is already running (bin/moemesh down stops it)" >&2; exit 1; }
  command -v curl >/dev/null || { echo "moemesh: up needs curl" >&2; exit 1; }
  [[ -f $model/config.json ]] || { echo "moemesh: $model is not a checkpoint directory (no config.json)" >&2; exit 1; }
  local m modules=(kv-store prefill-svc decode-svc gateway)
  ((single)) && modules=(decode-svc gateway)
  ((shards == 0)) || modules+=(expert-svc)
  ((planner == 0)) || modules+=(planner)
  for m in "${modules[@]}"; do ensure_built "$m"; done

  MESH_LOGS="$(mesh_home)/logs/$(date +%Y%m%d-%H%M%S)"
  mkdir -p "$MESH_LOGS" "$(mesh_home)/run"
  local key_file
  key_file="$(mesh_home)/run/mesh.key"
  (umask 077 && head -c 32 /dev/urandom >"$key_file")
  # internal services: loopback only, and no call without the mesh's credentials
  MESH_COMMON=("moemesh.mesh.key-file=$key_file" quarkus.http.host=127.0.0.1 quarkus.grpc.server.host=127.0.0.1)
  # Kernel threads per engine, unless --threads sets them all: a prefill engine takes every core (a long prompt alone
  # should have the machine; idle engines' workers sleep, and when engines share cores the kernels' pool hands each
  # part to whichever thread is free); the decode replicas split the cores (they run all the time).
  local cores i decode_list='' prefill_list='' prefill_threads decode_threads
  cores=$(nproc 2>/dev/null || echo 2)
  prefill_threads=${threads:-$cores}
  decode_threads=${threads:-$((single ? cores : cores / (planner ? max_replicas : replicas)))}
  ((decode_threads >= 1)) || decode_threads=1
  # prefill and decode alike: a prefill with speculation on hands the MTP layer's KV and the first draft to decode
  local engine=("moemesh.engine.model-dir=$model" "moemesh.engine.precision=$precision" "moemesh.engine.speculative-tokens=$speculative"
    "moemesh.engine.speculative-draft-vocabulary=$draft_vocabulary")
  ((detach)) || trap 'stop_mesh; exit 130' INT TERM
  ((detach)) || stop_with_this_shell
  # Expert parallelism: the prefill and decode replicas' MoE layers run on routed shards (+ a shared-expert service).
  local remote=() shard_list='' expert=("moemesh.expert.model-dir=$model" "moemesh.expert.precision=$precision" \
    "moemesh.expert.threads=1" "moemesh.expert.num-shards=$shards" "moemesh.expert.redundant-slots=$redundant")
  for ((i = 0; i < shards; i++)); do shard_list+="${shard_list:+,}localhost:$((9501 + 10 * i))"; done
  for ((i = 0; i < shards; i++)); do # shard 0 rebalances them all every --balance-every and hosts a lost shard's slots on the others; a restarted shard resumes from its peers
    start_service "expert-routed-$i" expert-svc $((9500 + 10 * i)) quarkus.grpc.server.port=$((9501 + 10 * i)) "${expert[@]}" \
      moemesh.expert.shard=$i "moemesh.expert.peers=$shard_list" "moemesh.expert.balancer.interval=$balance"
  done
  if ((shards > 0)); then
    remote=(moemesh.experts.routed=remote "moemesh.experts.shards=$shard_list" "moemesh.experts.redundant-slots=$redundant" \
      "moemesh.experts.shared=$shared")
    if [[ $shared == remote ]]; then
      start_service expert-shared expert-svc 9600 quarkus.grpc.server.port=9601 "${expert[@]}" moemesh.expert.role=shared
      remote+=(moemesh.experts.shared-address=localhost:9601)
    fi
  fi
  local routing=() decode_stores=()
  if ((single)); then
    routing=(moemesh.gateway.disaggregation=false)
  else
    local store_list=''
    for ((i = 0; i < stores; i++)); do # prefill puts each prompt's KV into the store with the most free memory
      start_service "kv-store-$i" kv-store $((9400 + 10 * i)) quarkus.grpc.server.port=$((9401 + 10 * i))
      store_list+="${store_list:+,}localhost:$((9401 + 10 * i))"
    done
    local prefill=("moemesh.prefill.kv-store=$store_list" "${engine[@]}" "moemesh.engine.threads=$prefill_threads" "${remote[@]}")
    if ((planner)); then # the planner starts them; the gateway knows every port a replica may come up on
      service_command prefill-svc '{httpPort}' 'quarkus.grpc.server.port={grpcPort}' "${prefill[@]}" >"$MESH_LOGS/prefill.launch"
      for ((i = 0; i < prefills; i++)); do await_owned "prefill-$i" $((9200 + 10 * i)); done
      for ((i = 0; i < max_replicas; i++)); do prefill_list+="${prefill_list:+,}localhost:$((9201 + 10 * i))"; done
    else
      for ((i = 0; i < prefills; i++)); do # the gateway routes each prompt by its prefix (README, "Routing")
        start_service "prefill-$i" prefill-svc $((9200 + 10 * i)) quarkus.grpc.server.port=$((9201 + 10 * i)) "${prefill[@]}"
        prefill_list+="${prefill_list:+,}localhost:$((9201 + 10 * i))"
      done
    fi
    routing=("moemesh.gateway.prefill.replicas=$prefill_list")
    decode_stores=("moemesh.decode.kv-stores=$store_list") # decode dials no store a request names beyond these
  fi
  local decode=("${engine[@]}" "moemesh.engine.threads=$decode_threads" "${remote[@]}" "${decode_stores[@]}")
  if ((planner)); then
    service_command decode-svc '{httpPort}' 'quarkus.grpc.server.port={grpcPort}' "${decode[@]}" >"$MESH_LOGS/decode.launch"
    for ((i = 0; i < replicas; i++)); do await_owned "decode-$i" $((9300 + 10 * i)); done
    for ((i = 0; i < max_replicas; i++)); do decode_list+="${decode_list:+,}localhost:$((9301 + 10 * i))"; done
    start_planner "$ttft" "$itl" "$profile" "$prefills" "$replicas" "$max_replicas"
  else
    for ((i = 0; i < replicas; i++)); do
      start_service "decode-$i" decode-svc $((9300 + 10 * i)) quarkus.grpc.server.port=$((9301 + 10 * i)) "${decode[@]}"
      decode_list+="${decode_list:+,}localhost:$((9301 + 10 * i))"
    done
  fi
  start_service gateway gateway "$port" "moemesh.gateway.model-dir=$model" "${routing[@]}" \
    "moemesh.gateway.decode.replicas=$decode_list" "quarkus.http.host=$host"
  if ! await_mesh; then
    stop_mesh
    exit 1
  fi
  local spec_note=''
  ((speculative == 0)) || spec_note=", MTP speculative decoding k=$speculative"
  local shape="${prefills} prefill and ${replicas} decode replica(s), ${stores} kv-store(s)"
  ((planner)) && shape="planner (TTFT ${ttft} ms, ITL ${itl} ms; ${prefills}-${max_replicas} prefill and ${replicas}-${max_replicas} decode replicas, now ${prefills} and ${replicas}), ${stores} kv-store(s)"
  ((single)) && shape="one decode process that computes the prompts too (--single)"
  ((shards == 0)) || shape+=", $shards routed-expert shard(s) ($redundant redundant slots, rebalanced every $balance), shared experts $shared"
  cat <<MSG
moemesh: the mesh is up on $(basename "$model") ($precision$spec_note; kernel threads: $prefill_threads per prefill, $decode_threads per decode engine): gateway, $shape
  OpenAI API   http://$host:$port/v1
  logs         $MESH_LOGS
  try          curl -s http://localhost:$port/v1/chat/completions -H 'Content-Type: application/json' \\
                 -d '{"model": "$(basename "$model")", "messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 32}'
MSG
  ((shards == 0)) || cat <<MSG
  balancer     curl -s http://localhost:9500/q/metrics | grep -E 'moemesh_expert_(balancedness|placement_version)'
MSG
  ((planner == 0)) || cat <<MSG
  planner      curl -s http://localhost:9700/q/metrics | grep moemesh_planner_replicas   (decisions: $MESH_LOGS/planner.log)
MSG
  if ((detach)); then
    printf '%s\n' "${MESH_PIDS[@]}" >"$pids_file"
    echo "moemesh: running in the background; bin/moemesh down stops it"
    return 0
  fi
  echo "moemesh: Ctrl-C stops it"
  wait "${MESH_PIDS[@]}"
  stop_mesh
}

cmd_down() {
  local pids_file pid
  pids_file="$(mesh_home)/run/mesh.pids"
  [[ -f $pids_file ]] || { echo "moemesh: no mesh is running in the background" >&2; return 0; }
  while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$pids_file"
  while read -r pid; do
    while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  done <"$pids_file"
  rm -f "$pids_file" "$(mesh_home)/run/mesh.key"
  echo "moemesh: stopped"
}
