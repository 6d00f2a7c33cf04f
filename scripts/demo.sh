#!/usr/bin/env bash
# Set up the project in .venv (if needed), run the demo sweep against the simulated
# vLLM server, print the answer and write the HTML report. Writes experiments.db,
# tuner-runs/, report.html and experiments-artifacts/ (the report for optuna-dashboard) here.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
.venv/bin/tuner run --space search_spaces/sim.yaml --trials "${TRIALS:-20}" "$@"
# exit 5: the answer is not settled yet (it says what would settle it): still an answer
.venv/bin/tuner best --space search_spaces/sim.yaml || [ $? -eq 5 ]
.venv/bin/tuner report --space search_spaces/sim.yaml --out report.html
