"""The server's GPU topology, and the settings vLLM ignores on it, for `tuner check` and the sweep.

``topology_for(space)`` reads the topology the space's server runs on: the space's
``topology:`` file when it names one (a simulated server, GPUs this process cannot
see), else NVML (tuner/telemetry/topology.py). ``check_topology`` says it in one line,
and for each param vLLM ignores there (tuner/check/custom_allreduce.py) which one and
why: the sweep never launches those values.
"""

from __future__ import annotations

from collections.abc import Callable

from tuner.check.custom_allreduce import FLAG, ignored_params
from tuner.check.report import Findings
from tuner.space.model_limits import baseline_argv
from tuner.space.spec import Space
from tuner.telemetry.topology import TopologyRead, load_topology_file, read_topology

TopologyReader = Callable[[], TopologyRead]


def topology_for(space: Space, read: TopologyReader = read_topology) -> TopologyRead:
    """The space's ``topology:`` file when it names one, else ``read()`` (NVML).

    Raises ConfigError for a ``topology:`` file that cannot be read or parsed."""
    given = space.spec.topology
    if given is None:
        return read()
    path = space.path.parent / given
    return TopologyRead(load_topology_file(path, key=f"{space.path}: topology"))


def ignored_settings(space: Space, topo: TopologyRead) -> dict[str, str]:
    """Each param vLLM ignores with the space's command on this topology, and why."""
    argv, env = baseline_argv(space)
    return ignored_params(space.spec, topo.topology, argv, env)


def check_topology(space: Space, topo: TopologyRead, found: Findings) -> None:
    """One line for the topology (ok; a warning when unknown and a param depends on it),
    and one warning per param whose values vLLM would ignore."""
    found.add("ok" if topo.topology is not None else "warning", "topology", _line(topo))
    for name, reason in ignored_settings(space, topo).items():
        found.add(
            "warning",
            f"params.{name}",
            f"vLLM ignores {FLAG} here: {reason}; its values are the defaults again, so "
            "the sweep records them as skipped and never launches them",
        )


def _line(topo: TopologyRead) -> str:
    notes = "".join(f"; {n}" for n in topo.notes)
    if topo.topology is None:
        return (
            f"unknown ({topo.reason}): settings that depend on it (the custom all-reduce) "
            "stay searched"
        )
    return f"{topo.topology.summary()} (from {topo.topology.source}){notes}"
