#!/usr/bin/env bash
# Set up the project in .venv (if needed), run the demo sweep against the simulated
# vLLM server, and print the answer. Writes experiments.db and tuner-runs/ here.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
.venv/bin/tuner run --space search_spaces/sim.yaml --trials "${TRIALS:-20}" "$@"
.venv/bin/tuner best --space search_spaces/sim.yaml
