"""How long a launch may take to become healthy, from the size of the weights on disk.

A launch that is not healthy by ``server.startup_timeout_s`` fails, so the limit must
cover a cold load of the largest weights: reading them, then torch.compile and CUDA
graphs. On the box search_spaces/nccl.yaml was written for, 547 GB loaded cold in 36
minutes (about 250 MB/s with the rest of the start). The limit is that start's fixed part
(``FIXED_S``) plus the weights at ``COLD_READ_BYTES_PER_S``, a slower read than measured so
that a busy disk still fits, rounded up to 5 minutes. Too long a limit only matters for a
launch that hangs; too short fails good launches after their load.

The size counted is that of the files vLLM reads (tuner/telemetry/weights_disk.py's
``weights_on_disk``, re-exported here).
"""

from __future__ import annotations

import math

from tuner.telemetry.weights_disk import weights_on_disk as weights_on_disk

FIXED_S = 600.0
"""Imports, torch.compile and CUDA graphs of a large model: minutes, whatever its size."""
COLD_READ_BYTES_PER_S = 200e6
"""A cold read of the weights, slower than the 250 MB/s measured (see above)."""
STEP_S = 300


def startup_timeout_s(weight_bytes: int) -> int:
    """``FIXED_S`` plus the weights at ``COLD_READ_BYTES_PER_S``, up to a 5-minute step."""
    seconds = FIXED_S + weight_bytes / COLD_READ_BYTES_PER_S
    return int(math.ceil(seconds / STEP_S) * STEP_S)
