#!/usr/bin/env bash
# compiled_vs_pure.sh - the mypyc-compiled install against its own pure-Python sources, alternating.
#
# Theory of operation: `make test-compiled` leaves build/compiled-venv with the wheel built by
# TERNMQ_MYPYC=1 installed. The same installed tree runs both variants: "compiled" as installed,
# "pure" with TERNMQ_PURE_PYTHON=1 (the .py sources shipped beside the extensions; the server
# that bench_tcp.py starts inherits the variable). Each round runs bench_vm.py, then
# bench_tcp.py's pipelined 1 -> 1 scenarios, once per variant, alternating, so that both see
# the same machine; each benchmark prints which variant it measured first. BROKER_PATH=1 adds
# bench_broker_path.py (the engine's CPU per message on one thread: the steadiest figure). The load average is
# printed before every run. Wrap it in `flock /work/bench.lock` (or your machine's lock).
#
#   make test-compiled && benchmarks/compiled_vs_pure.sh | tee build/compiled-vs-pure.log
#
# Environment: CPY (build/compiled-venv/bin/python), ROUNDS (1), REPEAT (3), COUNT (20000),
# BROKER_PATH (0).
set -eu
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CPY=${CPY:-$ROOT/build/compiled-venv/bin/python}
ROUNDS=${ROUNDS:-1}
REPEAT=${REPEAT:-3}
COUNT=${COUNT:-20000}
cd "$ROOT"
for round in $(seq "$ROUNDS"); do
    for variant in pure compiled; do
        pure=0
        [ "$variant" = pure ] && pure=1
        echo "=== round $round $variant vm: $(uptime)"
        TERNMQ_PURE_PYTHON=$pure timeout 480 "$CPY" benchmarks/bench_vm.py --repeat "$REPEAT"
        if [ "${BROKER_PATH:-0}" = 1 ]; then
            TERNMQ_PURE_PYTHON=$pure timeout 480 "$CPY" benchmarks/bench_broker_path.py
        fi
    done
    for variant in pure compiled; do
        pure=0
        [ "$variant" = pure ] && pure=1
        echo "=== round $round $variant tcp: $(uptime)"
        TERNMQ_PURE_PYTHON=$pure timeout 480 "$CPY" benchmarks/bench_tcp.py --repeat "$REPEAT" \
            --count "$COUNT" --only "1->1 (pipelined"
    done
done
