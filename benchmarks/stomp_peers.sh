#!/usr/bin/env bash
# stomp_peers.sh - the STOMP side-by-side table: ternmq against ActiveMQ 5.17 and RabbitMQ 3.10.
#
# Theory of operation: the peers and the load generator live in ../shared/bench (README
# there). Each round starts one broker at a time - ternmq from this tree
# (`ternmq serve --stomp-port 61623`, fresh data dir), then ActiveMQ, then RabbitMQ - warms
# it up (S1 x 200,000 and S1w x 30,000, not recorded, as ../shared/bench/bench.sh does),
# runs every scenario once with stompload.py, and stops it; ROUNDS rounds alternate the
# brokers back to back, so each figure is the median of ROUNDS runs taken under the same
# conditions. The load average is logged before each broker's turn. At the end
# stompload.py prints the pivot (headline per scenario and broker) and the full report.
#
#   make bench-peers                      # or: benchmarks/stomp_peers.sh
#   ROUNDS=1 SCENARIOS=S1,S3 benchmarks/stomp_peers.sh
#
# Needs root (the peers run as Debian services) and `../shared/bench/setup-peers.sh install`
# once. Environment: BENCH (default ../shared/bench), SCENARIOS (S1,S2sync,S2b100,S3,S4,S5),
# ROUNDS (3), BROKERS ("ternmq activemq rabbitmq"), OUT (build/bench-peers), TERNMQ_PYTHON
# (.venv/bin/python), QUIET_PCT / MAX_OTHER (stompload.py --quiet-pct / --max-other; 0 = do
# not wait for a quiet machine, do not redo runs disturbed by other work), AMQ_STOMP_PORT
# (61633: ActiveMQ's STOMP port, moved off 61613, ternmq's own default).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=${BENCH:-$ROOT/../shared/bench}
SCENARIOS=${SCENARIOS:-S1,S2sync,S2b100,S3,S4,S5}
ROUNDS=${ROUNDS:-3}
BROKERS=${BROKERS:-ternmq activemq rabbitmq}
OUT=${OUT:-$ROOT/build/bench-peers}
TERNMQ_PYTHON=${TERNMQ_PYTHON:-$ROOT/.venv/bin/python}
QUIET_PCT=${QUIET_PCT:-0}
MAX_OTHER=${MAX_OTHER:-0}
TERNMQ_STOMP_PORT=61623
# ActiveMQ's STOMP connector moves off 61613, which is also ternmq's default STOMP port (a
# `ternmq serve` started elsewhere on the machine, by a test for instance, would take it).
AMQ_STOMP_PORT=${AMQ_STOMP_PORT:-61633}

# shellcheck source=/dev/null
source "$BENCH/setup-peers.sh"
LOADPY=$BENCH/.venv/bin/python
[ -x "$LOADPY" ] || install_venv
mkdir -p "$OUT"
[ -f "$AMQ_CONF/activemq.xml" ] || install_activemq_instance
sed -i "s#stomp://127.0.0.1:[0-9]*#stomp://127.0.0.1:$AMQ_STOMP_PORT#" "$AMQ_CONF/activemq.xml"
eval "setup_$(declare -f wait_port)"
wait_port() {  # setup-peers.sh's start_activemq waits for 61613: the moved port instead
  local port=$1
  [ "$port" = 61613 ] && port=$AMQ_STOMP_PORT
  setup_wait_port "$port" "${2:-60}"
}

TERNMQ_PID=
TERNMQ_DATA=
start_ternmq() {
  TERNMQ_DATA=$(mktemp -d /tmp/ternmq-peers-XXXXXX)
  PYTHONPATH="$ROOT/src" "$TERNMQ_PYTHON" -m ternmq.cli serve --port 0 \
    --stomp-port "$TERNMQ_STOMP_PORT" --http-port -1 --data-dir "$TERNMQ_DATA" \
    --log-level warning >"$OUT/ternmq-server.log" 2>&1 &
  TERNMQ_PID=$!
  wait_port "$TERNMQ_STOMP_PORT" 30 && log "ternmq up: pid $TERNMQ_PID, STOMP 127.0.0.1:$TERNMQ_STOMP_PORT"
}
stop_ternmq() {
  if [ -n "$TERNMQ_PID" ]; then
    kill "$TERNMQ_PID" 2>/dev/null || true
    wait "$TERNMQ_PID" 2>/dev/null || true
  fi
  [ -n "$TERNMQ_DATA" ] && rm -rf "$TERNMQ_DATA"
  TERNMQ_PID= TERNMQ_DATA=
}

target() {  # the stompload.py options that reach BROKER
  case $1 in
    ternmq) echo "--port $TERNMQ_STOMP_PORT" ;;
    activemq) echo "--broker activemq --port $AMQ_STOMP_PORT" ;;
    *) echo "--broker $1" ;;
  esac
}
port_of() {  # BROKER's STOMP port
  case $1 in ternmq) echo "$TERNMQ_STOMP_PORT" ;; activemq) echo "$AMQ_STOMP_PORT" ;; rabbitmq) echo 61614 ;; esac
}
owner() {  # the name of the process listening on PORT (empty: nobody)
  ss -Hltnp "sport = :$1" | grep -o 'users:(("[^"]*"' | head -1 | cut -d'"' -f2
}
expected() {  # the process name BROKER's STOMP listener runs as
  case $1 in ternmq) echo python ;; activemq) echo java ;; rabbitmq) echo beam ;; esac
}
port_free() {  # wait up to 120 s for BROKER's port to be free (another program may hold it)
  local port i
  port=$(port_of "$1")
  for ((i = 0; i < 120; i++)); do
    [ -z "$(owner "$port")" ] && return 0
    sleep 1
  done
  log "port $port still held by $(owner "$port"): $1 skipped this round"
  return 1
}
is_broker() {  # does BROKER itself (not some other program) listen on its STOMP port?
  local who
  who=$(owner "$(port_of "$1")")
  case $who in "$(expected "$1")"*) return 0 ;; esac
  log "port $(port_of "$1") is held by '$who', not $1: $1 skipped this round"
  return 1
}

current=
cleanup() {  # stop the broker of an interrupted turn; give ActiveMQ its 61613 back
  if [ -n "$current" ]; then "stop_$current"; fi
  sed -i "s#stomp://127.0.0.1:$AMQ_STOMP_PORT#stomp://127.0.0.1:61613#" "$AMQ_CONF/activemq.xml"
}
trap cleanup EXIT
for round in $(seq 1 "$ROUNDS"); do
  for b in $BROKERS; do
    echo "round $round $b $(date -u +%FT%TZ) $(uptime)" | tee -a "$OUT/load.log"
    port_free "$b" || continue
    current=$b
    "start_$b" || true
    sleep 3
    if ! is_broker "$b"; then
      "stop_$b"
      current=
      continue
    fi
    # shellcheck disable=SC2046
    "$LOADPY" "$BENCH/stompload.py" run $(target "$b") --scenario S1 --count 200000 --quiet-pct 0 >/dev/null || true
    # shellcheck disable=SC2046
    "$LOADPY" "$BENCH/stompload.py" run $(target "$b") --scenario S1w --count 30000 --quiet-pct 0 >/dev/null || true
    # shellcheck disable=SC2046
    "$LOADPY" "$BENCH/stompload.py" run $(target "$b") --scenario "$SCENARIOS" --runs 1 \
      --quiet-pct "$QUIET_PCT" --max-other "$MAX_OTHER" --json-out "$OUT/$b.part.jsonl" \
      | tee -a "$OUT/$b.log"
    # stompload.py labels a run against a bare --port "custom": name it
    sed 's/"broker": *"custom"/"broker": "ternmq"/' "$OUT/$b.part.jsonl" >>"$OUT/$b.jsonl"
    rm -f "$OUT/$b.part.jsonl"
    "stop_$b"
    current=
    echo "round $round $b done $(date -u +%FT%TZ) $(uptime)" | tee -a "$OUT/load.log"
  done
done
files=()
for b in $BROKERS; do files+=("$OUT/$b.jsonl"); done
"$LOADPY" "$BENCH/stompload.py" pivot "${files[@]}" | tee "$OUT/pivot.md"
"$LOADPY" "$BENCH/stompload.py" report "${files[@]}" | tee "$OUT/report.md"
