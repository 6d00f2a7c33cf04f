"""The study's GPU topology and the settings skipped on it, for `tuner best`, trials and the report.

``tuner run`` stores the topology it read and the params vLLM ignores there
(tuner/study/run/topology.py: the study attrs ``tuner_topology`` and ``tuner_ignored``);
``topology_answer`` reads them back into one value with its sentences and JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.study import attrs
from tuner.telemetry.topology import TopologyRead


@dataclass(frozen=True)
class SkippedSetting:
    """A param whose values vLLM ignores on the study's GPUs: recorded, never launched."""

    param: str
    values: tuple[str, ...]
    reason: str

    def sentence(self) -> str:
        return (
            f"{self.param}={'/'.join(self.values)} skipped, never launched: vLLM ignores it "
            f"here ({self.reason})"
        )

    def to_json(self) -> dict[str, Any]:
        return {"param": self.param, "values": list(self.values), "reason": self.reason}


@dataclass(frozen=True)
class TopologyAnswer:
    """The topology as stored (``read``) and the settings skipped on it."""

    read: TopologyRead
    skipped: tuple[SkippedSetting, ...] = ()

    @property
    def summary(self) -> str:
        return self.read.describe()

    def lines(self) -> list[str]:
        return [f"Topology: {self.summary}", *(s.sentence() for s in self.skipped)]

    def to_json(self) -> dict[str, Any]:
        topology = self.read.topology
        return {
            "summary": self.summary,
            "gpus": topology.gpus if topology is not None else None,
            "source": topology.source if topology is not None else None,
            "unavailable": self.read.reason if topology is None else None,
            "pairs": [p.to_json() for p in topology.pairs] if topology is not None else [],
            "skipped": [s.to_json() for s in self.skipped],
        }


def topology_answer(study_attrs: Mapping[str, Any]) -> TopologyAnswer | None:
    """What the study stored of its topology; None for a study run before it was stored."""
    read = TopologyRead.from_json(study_attrs.get(attrs.TOPOLOGY))
    if read is None:
        return None
    ignored: Mapping[str, Any] = study_attrs.get(attrs.IGNORED) or {}
    skipped = tuple(
        SkippedSetting(name, tuple(entry.get("values") or ()), str(entry.get("reason") or ""))
        for name, entry in sorted(ignored.items())
    )
    return TopologyAnswer(read, skipped)
