"""``nvidia-smi topo -m``: its GPU-to-GPU matrix parsed, and the command run where it exists.

It names NVSwitch bonds (``NV18``) that NVML's per-pair answer does not count, so the
topology reader (tuner/telemetry/topology.py) adds its cells where it can; a saved copy
of its output is also a topology given by hand. The parser takes the output of every
nvidia-smi version: cells split on tabs or runs of spaces, NIC rows and the legend
left out.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess

log = logging.getLogger(__name__)

_SMI_TIMEOUT_S = 15.0
_CELL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")


def parse_topo_matrix(text: str) -> dict[tuple[int, int], str]:
    """The GPU-to-GPU cells of ``nvidia-smi topo -m`` as ``{(a, b): "NV18" | "SYS" ...}``
    with ``a < b``. NIC rows and columns, CPU/NUMA affinity and the legend are left out;
    cells are split on tabs or runs of spaces, both of which nvidia-smi versions print."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    # The header is the first line starting "GPU0" not followed by "X" (a row's self cell);
    # some outputs indent it, vLLM's collect_env prints it flush left.
    header_at = next((i for i, ln in enumerate(lines) if _is_header(ln.split())), None)
    if header_at is None:
        return {}
    columns = lines[header_at].split()
    gpu_cols = [c for c in columns if re.fullmatch(r"GPU\d+", c)]
    cells: dict[tuple[int, int], str] = {}
    for line in lines[header_at + 1 :]:
        fields = line.split()
        if not fields:
            break  # the blank line before the legend
        row = re.fullmatch(r"GPU(\d+)", fields[0])
        if row is None:
            continue  # a NIC row
        a = int(row.group(1))
        for name, cell in zip(gpu_cols, fields[1:], strict=False):
            if not _CELL.match(cell):
                break
            b = int(name[3:])
            if a != b:
                cells[(min(a, b), max(a, b))] = cell
    return cells


def _is_header(fields: list[str]) -> bool:
    return bool(fields) and fields[0] == "GPU0" and (len(fields) < 2 or fields[1] != "X")


def count_rows(text: str) -> int:
    """How many GPU rows the matrix has (each row's own cell is ``X``)."""
    return len({m.group(1) for m in re.finditer(r"^\s*GPU(\d+)\s+X\b", text, re.MULTILINE)})


def run_nvidia_smi() -> str | None:
    """``nvidia-smi topo -m``'s output, or None where the command is missing or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        done = subprocess.run(  # noqa: S603 - a fixed argv, no shell
            [exe, "topo", "-m"], capture_output=True, text=True, timeout=_SMI_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.debug("nvidia-smi topo -m failed: %r", exc)
        return None
    return done.stdout if done.returncode == 0 else None
