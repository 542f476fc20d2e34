#!/usr/bin/env bash
# stomp_before_after.sh - two ternmq trees and ActiveMQ 5.17, STOMP and Python clients, alternating.
#
# Theory of operation: a change to a hot path is judged A/B (docs/performance.md, "How the
# figures are taken"): the tree before it ("before", BEFORE_SRC, e.g. a `git archive` of the
# old main) and this tree ("after") run the same load one after the other, and ActiveMQ runs
# it in the same rounds, so that the ratios come from back-to-back runs on a machine shared
# with other work. Each turn starts one broker (ternmq: a fresh `ternmq serve` with STOMP on
# 61651 and the native port on 61662; ActiveMQ: ../shared/bench/setup-peers.sh's instance,
# its STOMP connector moved to 61633 for the run and back to 61613 at the end), warms it up
# (S1 x 50,000, not recorded), runs stompload.py's S1, S2sync (3,000 messages: a receipt
# per persistent send), S2b100 (50,000), S3, S4 and S5 once each, then pyclients.py
# (non-persistent x 30,000, persistent x 2,000: ternmq's own client over the native port,
# stomp.py against ActiveMQ), and stops it. Figures land in OUT: BROKER.jsonl (stompload.py
# --json-out, read by stomp_peers_table.py --brokers before,after,activemq --ours after),
# py-BROKER.jsonl (pyclients.py's lines) and log.
#
#   git archive OLD src | tar -x -C /tmp/before
#   BEFORE_SRC=/tmp/before/src benchmarks/stomp_before_after.sh
#   .venv/bin/python benchmarks/stomp_peers_table.py build/before-after/{before,after,activemq}.jsonl \
#       --brokers before,after,activemq --ours after --runs
#
# Needs root and `../shared/bench/setup-peers.sh install`. Environment: BEFORE_SRC (required),
# ROUNDS (3), BROKERS ("before after activemq"), OUT (build/before-after), TERNMQ_PYTHON
# (.venv/bin/python), LOADPY (a python with uvloop and stomp.py: ../shared/bench/.venv's),
# SCENARIOS ("S1 S2sync S2b100 S3 S4 S5"), WARMUP (S1 messages before them: 50000),
# PYCLIENTS (1: run pyclients.py too; 0: not), COMPILED_PYTHON (build/compiled-venv/bin/python:
# the broker "compiled" in BROKERS runs the mypyc release wheel `make test-compiled` installed
# there, server and Python client both).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=${BENCH:-$ROOT/../shared/bench}
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-$ROOT/build/before-after}
BROKERS=${BROKERS:-before after activemq}
TERNMQ_PYTHON=${TERNMQ_PYTHON:-$ROOT/.venv/bin/python}
LOADPY=${LOADPY:-$BENCH/.venv/bin/python}
SCENARIOS=${SCENARIOS:-S1 S2sync S2b100 S3 S4 S5}
WARMUP=${WARMUP:-50000}
PYCLIENTS=${PYCLIENTS:-1}
COMPILED_PYTHON=${COMPILED_PYTHON:-$ROOT/build/compiled-venv/bin/python}
: "${BEFORE_SRC:?set BEFORE_SRC to the src directory of the tree to compare with}"
mkdir -p "$OUT"
# shellcheck source=/dev/null
source "$BENCH/setup-peers.sh"
AMQ_STOMP_PORT=61633
LOAD="$LOADPY $BENCH/stompload.py"
# pyclients.py's stomp.py client dials 61613: a copy that dials the moved port
sed 's/("127.0.0.1", 61613)/("127.0.0.1", '"$AMQ_STOMP_PORT"')/' "$BENCH/pyclients.py" >"$OUT/pyclients-amq.py"
sed -i "s#stomp://127.0.0.1:[0-9]*?#stomp://127.0.0.1:$AMQ_STOMP_PORT?#" "$AMQ_CONF/activemq.xml"
trap 'sed -i "s#stomp://127.0.0.1:$AMQ_STOMP_PORT?#stomp://127.0.0.1:61613?#" "$AMQ_CONF/activemq.xml"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  for b in $BROKERS; do
    echo "round $r $b $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/log"
    if [ "$b" = activemq ]; then
      start_activemq >/dev/null 2>&1 &
      for _ in $(seq 1 90); do (exec 3<>/dev/tcp/127.0.0.1/$AMQ_STOMP_PORT) 2>/dev/null && break; sleep 1; done
      sleep 3
      PID=$(activemq_pid)
      TGT="--broker activemq --port $AMQ_STOMP_PORT"
    else
      PY=$TERNMQ_PYTHON
      case $b in
        before) SRC=$BEFORE_SRC ;;
        compiled) SRC="" PY=$COMPILED_PYTHON ;;  # the installed release wheel, not a tree
        *) SRC=$ROOT/src ;;
      esac
      D=$(mktemp -d /tmp/ternmq-ab-XXXXXX)
      PYTHONPATH=$SRC "$PY" -m ternmq.cli serve --port 61662 --stomp-port 61651 \
        --http-port -1 --data-dir "$D" --log-level warning >"$OUT/server-$b-$r.log" 2>&1 &
      PID=$!
      for _ in $(seq 1 60); do (exec 3<>/dev/tcp/127.0.0.1/61651) 2>/dev/null && break; sleep 1; done
      TGT="--port 61651"
    fi
    # shellcheck disable=SC2086
    $LOAD run $TGT --scenario S1 --count "$WARMUP" --quiet-pct 0 --max-other 0 >/dev/null 2>&1
    for sc in $SCENARIOS; do
      extra=""
      case $sc in S2sync) extra="--count 3000" ;; S2b100) extra="--count 50000" ;; esac
      # shellcheck disable=SC2086
      timeout 200 $LOAD run $TGT --scenario $sc $extra --quiet-pct 0 --max-other 0 \
        --broker-pid "$PID" --json-out "$OUT/$b.part.jsonl" 2>&1 | grep "run 1" | sed "s/^/$b /" >>"$OUT/log"
    done
    sed "s/\"broker\": *\"[a-z]*\"/\"broker\": \"$b\"/" "$OUT/$b.part.jsonl" >>"$OUT/$b.jsonl"
    rm -f "$OUT/$b.part.jsonl"
    if [ "$PYCLIENTS" = 0 ]; then
      :
    elif [ "$b" = activemq ]; then
      timeout 200 "$LOADPY" "$OUT/pyclients-amq.py" activemq --count 30000 >>"$OUT/py-$b.jsonl" 2>/dev/null
      timeout 200 "$LOADPY" "$OUT/pyclients-amq.py" activemq --count 2000 --persistent >>"$OUT/py-$b.jsonl" 2>/dev/null
    else
      PYTHONPATH=$SRC timeout 200 "$PY" "$BENCH/pyclients.py" ternmq --url tcp://127.0.0.1:61662 \
        --count 30000 >>"$OUT/py-$b.jsonl" 2>/dev/null
      PYTHONPATH=$SRC timeout 200 "$PY" "$BENCH/pyclients.py" ternmq --url tcp://127.0.0.1:61662 \
        --count 2000 --persistent >>"$OUT/py-$b.jsonl" 2>/dev/null
    fi
    if [ "$b" = activemq ]; then
      stop_activemq >/dev/null 2>&1
    else
      kill -TERM "$PID"
      wait "$PID"
      rm -rf "$D"
    fi
    echo "round $r $b done $(date -u +%T)" >>"$OUT/log"
  done
done
echo DONE >>"$OUT/log"
