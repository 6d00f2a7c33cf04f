"""The topology in the sweep: read once, stored with the study, settings vLLM ignores skipped.

At the start of `tuner run`, ``prepare_topology`` reads the GPUs' topology
(tuner/check/topology.py: the space's ``topology:`` file, else NVML), stores it as the
study attr ``tuner_topology`` and says it. Each param vLLM ignores there with the server's
TP size (tuner/check/custom_allreduce.py) is recorded in ``tuner_ignored`` with the
reason and its values. The search then leaves those params at default, as it does the
params the probe freezes (``Snapshot.frozen``); a configuration that sets one anyway
(optuna's TPE proposing freely, a trial queued by an earlier run, a TP that a param sets)
is refused by the gate (tuner/study/gate.py): PRUNED with the reason, never launched.
The space's choices themselves stay as they are: optuna refuses a categorical param
whose choices change within a study, and a resumed study must open.
"""

from __future__ import annotations

import optuna

from tuner.check.topology import TopologyReader, ignored_settings, topology_for
from tuner.events import SweepObserver
from tuner.space.spec import Space
from tuner.study import attrs
from tuner.study.effects.model import levels
from tuner.telemetry.topology import TopologyRead, read_topology


def prepare_topology(
    study: optuna.Study,
    space: Space,
    observer: SweepObserver,
    read: TopologyReader = read_topology,
    said: str | None = None,
) -> TopologyRead:
    """The topology read, stored with the params vLLM ignores on it, both said.

    ``said``: why there are no GPU facts, when the run has said it already (the GPU
    backend's reason, e.g. "NVML not found (...): GPU telemetry off"); an unknown topology
    for that same reason is not said to be NVML's fault a second time.
    """
    topo = topology_for(space, read)
    study.set_user_attr(attrs.TOPOLOGY, topo.to_json())
    observer.message(f"topology: {unknown_topology_line(topo, said) or topo.describe()}")
    ignored = ignored_settings(space, topo)
    record = {
        name: {"reason": reason, "values": [str(v) for v in levels(space.spec.params[name])[1:]]}
        for name, reason in ignored.items()
    }
    study.set_user_attr(attrs.IGNORED, record)
    for name, entry in record.items():
        observer.message(
            f"skipped, never launched: {name}={'/'.join(entry['values'])}: vLLM ignores it "
            f"here ({entry['reason']})"
        )
    return topo


def unknown_topology_line(topo: TopologyRead, said: str | None = None) -> str | None:
    """The one line for a topology that could not be read, None for one that was: why (unless
    ``said`` gave that reason already) and what it costs the search."""
    if topo.topology is not None:
        return None
    reason = topo.reason or ""
    why = "" if not reason or (said is not None and said.startswith(reason)) else f" ({reason})"
    return f"unknown{why}: settings that depend on it (the custom all-reduce) stay searched"
