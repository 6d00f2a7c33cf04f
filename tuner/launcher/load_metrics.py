"""A launch's load as a metric: seconds to healthy, and the phases its server's log told.

An objective or a limit may name a launch's load (tuner/vocabulary.py ``LOAD_METRICS``):
``time_to_healthy_s`` is what the launcher measured from start to a healthy answer;
``load_weights_s``, ``load_compile_s`` and ``load_cudagraph_s`` are the phases
tuner/launcher/load_phases.py reads from the log. One value per launch, whatever the
concurrency level. A phase the log did not say while it said others did not run (no CUDA
graphs under ``--enforce-eager``): 0 seconds. A log that said no phase at all gives no
value: the launch then has none for that metric, never a made-up 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from tuner.launcher.load_phases import LoadPhases
from tuner.vocabulary import LOAD_METRICS

PHASE_OF: Final = {
    "load_weights_s": "weights",
    "load_compile_s": "compile",
    "load_cudagraph_s": "cuda_graphs",
}
"""Each phase metric's phase (load_phases.PHASES); ``time_to_healthy_s`` is the whole load."""


def load_metric_value(
    metric: str, healthy_s: float | None, phases: LoadPhases | Mapping[str, Any] | None
) -> float | None:
    """``metric``'s value for one launch: ``healthy_s`` for ``time_to_healthy_s``, else its
    phase's seconds (``phases``: parsed, or as stored in ``tuner_launches.load_phases``);
    None when the launch has none (never healthy, or its log said no phase)."""
    if metric == "time_to_healthy_s":
        return healthy_s
    phase = PHASE_OF.get(metric)
    if phase is None:
        raise ValueError(f"{metric!r} is not a launch's load; use one of {', '.join(LOAD_METRICS)}")
    read = phases if isinstance(phases, LoadPhases) else LoadPhases.from_json(phases)
    if read is None or not read.found:
        return None
    return read.seconds(phase) or 0.0
