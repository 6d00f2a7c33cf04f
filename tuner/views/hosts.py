"""Which hosts and which hardware a study's answer comes from (`tuner best`).

Launches on different hardware are not one population: an H100 box's throughput is not a
sample of the same thing as an H200 box's. Each launch records its host's fingerprint
(tuner/telemetry/fingerprint.py); `tuner best` answers for one fingerprint: the one asked
for with ``--fingerprint``, else the one with the most completed launches. Launches
recorded before fingerprints existed (NULL) count with whichever is chosen: they come
from the study's single kind of hardware of that time. The other fingerprints' launches
are left out and named, with their hosts, so they can be asked for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.errors import ConfigError
from tuner.storage import LaunchRow, LaunchStatus, Store
from tuner.telemetry.fingerprint import Fingerprint
from tuner.telemetry.inventory import Inventory


@dataclass(frozen=True)
class HardwareGroup:
    """The launches of one fingerprint: its digest, its facts in words, hosts and count."""

    fingerprint: str | None
    described: str | None
    hosts: tuple[str, ...]
    launches: int

    def to_json(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "hardware": self.described,
            "hosts": list(self.hosts),
            "launches": self.launches,
        }


@dataclass(frozen=True)
class StudyHardware:
    """The fingerprint an answer is for (``used``) and the ones left out (``others``)."""

    used: HardwareGroup
    others: tuple[HardwareGroup, ...]

    @property
    def fingerprint(self) -> str | None:
        """The digest to analyse (None: the study's launches have no fingerprint, or one)."""
        return self.used.fingerprint if self.others else None

    def lines(self) -> list[str]:
        hosts = ", ".join(self.used.hosts) or "none yet"
        what = f" ({self.used.described})" if self.used.described else ""
        out = [f"Hosts: {hosts}{what}"]
        for other in self.others:
            out.append(
                f"Not compared: {other.launches} launches on other hardware, fingerprint "
                f"{other.fingerprint} ({other.described or 'facts not recorded'}; hosts "
                f"{', '.join(other.hosts)}); see them with --fingerprint {other.fingerprint}"
            )
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"hosts": list(self.used.hosts)}
        if self.used.fingerprint is not None:
            out["fingerprint"] = self.used.to_json()
        if self.others:
            out["other_fingerprints"] = [o.to_json() for o in self.others]
        return out


def study_hardware(store: Store, study: str, wanted: str | None = None) -> StudyHardware:
    """Group a study's completed launches by fingerprint and pick the one to answer for."""
    rows = [r for r in store.launches(study) if r.status == LaunchStatus.COMPLETE]
    counts = Counter(r.fingerprint for r in rows if r.fingerprint is not None)
    if wanted is not None and wanted not in counts:
        known = ", ".join(f"{k} ({n} launches)" for k, n in counts.most_common()) or "none"
        raise ConfigError(
            f"--fingerprint {wanted}: study {study!r} has no completed launch on it; "
            f"its fingerprints: {known}"
        )
    chosen = wanted or (counts.most_common(1)[0][0] if counts else None)
    facts = {w.fingerprint: w.hardware for w in store.workers(study)}
    row = store.study(study)
    seen = Inventory.from_dict(row.inventory) if row is not None and row.inventory else None

    def group(digest: str | None, members: list[LaunchRow]) -> HardwareGroup:
        hosts = tuple(sorted({r.host for r in members}))
        hardware = facts.get(digest) if digest is not None else None
        return HardwareGroup(
            fingerprint=digest,
            described=_described(hardware, seen, hosts) if hardware is not None else None,
            hosts=hosts,
            launches=len(members),
        )

    used = group(chosen, [r for r in rows if r.fingerprint in (None, chosen)])
    others = tuple(
        group(digest, [r for r in rows if r.fingerprint == digest])
        for digest, _ in counts.most_common()
        if digest != chosen
    )
    return StudyHardware(used=used, others=others)


def _described(hardware: Mapping[str, Any], seen: Inventory | None, hosts: tuple[str, ...]) -> str:
    """The fingerprint in words, with NCCL's and the server's versions as its servers
    reported them (the study's inventory, which `tuner show` prints) on a host of the group.

    The fingerprint is taken before any server starts, from the packages beside tuner: a
    server run from another environment (the simulator, a vLLM of its own venv) is seen
    only by the inventory. The digest stays the fingerprint's own.
    """
    facts = dict(hardware)
    if seen is not None and seen.hostname in hosts:
        facts["nccl"] = seen.nccl_version or facts.get("nccl")
        facts["vllm"] = seen.server_version or facts.get("vllm")
    return Fingerprint(facts=facts).describe()
