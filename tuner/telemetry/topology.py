"""How the GPUs of this host are connected: NVML's P2P and NVLink status between every pair.

``read_topology()`` asks NVML, for every pair of GPUs, whether peer-to-peer reads and
writes work and whether NVLink joins them (``nvmlDeviceGetP2PStatus``), and the PCIe
path between them (``nvmlDeviceGetTopologyCommonAncestor``); for every GPU its active
NVLink links (``nvmlDeviceGetNvLinkState``). Where ``nvidia-smi`` exists, its ``topo -m``
matrix is read too (tuner/telemetry/topo_smi.py): it names NVSwitch bonds (``NV18``) that
NVML's per-pair answer does not count. A machine without NVML gets ``None`` with the
reason, never an exception: the topology is a fact tuner uses when it has it.

``load_topology_file`` reads a topology given by hand (a ``Topology.to_json`` file or a
saved ``nvidia-smi topo -m``): for a simulated server, or GPUs this process cannot see.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.errors import ConfigError
from tuner.telemetry.gpu import init_failure_reason
from tuner.telemetry.topo_smi import count_rows, parse_topo_matrix, run_nvidia_smi

__all__ = [
    "PCIE_LEVELS",
    "PairLink",
    "Topology",
    "TopologyRead",
    "load_topology_file",
    "parse_topo_matrix",
    "read_topology",
    "run_nvidia_smi",
]

log = logging.getLogger(__name__)

# NVML's nvmlGpuTopologyLevel_t, named as `nvidia-smi topo -m` names them. The values are
# NVML's ABI (nvml.h), spelled out so that an older pynvml without the constants still reads.
PCIE_LEVELS: dict[int, str] = {0: "BOARD", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
# nvmlGpuP2PCapsIndex_t and NVML_P2P_STATUS_OK, likewise.
_P2P_READ, _P2P_WRITE, _P2P_NVLINK, _P2P_OK = 0, 1, 2, 0

SmiRunner = Callable[[], "str | None"]


@dataclass(frozen=True)
class PairLink:
    """How two GPUs (NVML indices, ``a < b``) reach each other; None where nobody said."""

    a: int
    b: int
    pcie: str | None = None
    """The PCIe path from NVML: PIX, PXB, PHB, NODE, SYS (BOARD: two GPUs on one card)."""
    smi: str | None = None
    """The cell of ``nvidia-smi topo -m``: NV# (a bond of # NVLinks) or a PCIe level."""
    nvlink: bool | None = None
    """NVML's P2P status over NVLink is OK: the test vLLM's ``is_fully_connected`` makes."""
    p2p_read: bool | None = None
    p2p_write: bool | None = None

    @property
    def linked(self) -> bool | None:
        """NVLink joins the pair: NVML's answer, else nvidia-smi's NV#; None if unknown."""
        if self.nvlink is not None:
            return self.nvlink
        if self.smi is not None:
            return self.smi.startswith("NV")
        return None

    @property
    def level(self) -> str | None:
        """The one word for the pair: nvidia-smi's cell, else NVML's PCIe level."""
        return self.smi or self.pcie

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "pcie": self.pcie,
            "smi": self.smi,
            "nvlink": self.nvlink,
            "p2p_read": self.p2p_read,
            "p2p_write": self.p2p_write,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> PairLink:
        return cls(
            a=int(raw["a"]),
            b=int(raw["b"]),
            pcie=raw.get("pcie"),
            smi=raw.get("smi"),
            nvlink=raw.get("nvlink"),
            p2p_read=raw.get("p2p_read"),
            p2p_write=raw.get("p2p_write"),
        )


@dataclass(frozen=True)
class Topology:
    """The GPUs of one host and every pair's link (indices are NVML's)."""

    gpus: int
    pairs: tuple[PairLink, ...] = ()
    nvlink_links: tuple[int, ...] = ()
    """Active NVLink links per GPU (empty when not read)."""
    source: str = "nvml"
    """Where it was read: ``nvml``, ``nvml+nvidia-smi``, ``nvidia-smi`` or ``file PATH``."""

    def pair(self, a: int, b: int) -> PairLink | None:
        lo, hi = min(a, b), max(a, b)
        return next((p for p in self.pairs if p.a == lo and p.b == hi), None)

    def pairs_of(self, gpus: Iterable[int]) -> list[PairLink | None]:
        """The link of every pair among ``gpus`` (None for a pair never read)."""
        ids = sorted(set(gpus))
        return [self.pair(a, b) for i, a in enumerate(ids) for b in ids[i + 1 :]]

    def fully_nvlinked(self, gpus: Iterable[int]) -> bool:
        """Every pair among ``gpus`` joined by NVLink (vLLM's "fully connected"); a pair
        unknown counts as not joined, as vLLM counts an NVML error."""
        return all(p is not None and p.linked is True for p in self.pairs_of(gpus))

    def unlinked(self, gpus: Iterable[int]) -> list[PairLink]:
        """The pairs among ``gpus`` that NVML or nvidia-smi says NVLink does not join: one
        is enough to know the GPUs are not fully NVLinked, whatever the others are."""
        return [p for p in self.pairs_of(gpus) if p is not None and p.linked is False]

    def p2p_unsupported(self, gpus: Iterable[int]) -> list[PairLink]:
        """The pairs among ``gpus`` whose P2P reads NVML says do not work."""
        return [p for p in self.pairs_of(gpus) if p is not None and p.p2p_read is False]

    def summary(self) -> str:
        """One line, e.g. "8 GPUs, PCIe only (SYS/NODE between pairs), no NVLink"."""
        head = f"{self.gpus} GPU{'s' if self.gpus != 1 else ''}"
        if self.gpus < 2:
            return f"{head}: no pairs"
        pairs = self.pairs_of(range(self.gpus))
        linked = [p for p in pairs if p is not None and p.linked]
        pcie = _levels(p for p in pairs if p is not None and not p.linked)
        total = len(pairs)
        if linked and len(linked) == total:
            # nvidia-smi's bond names (NV18) only: NVML's PCIe level of an NVLinked pair is
            # not the path its traffic takes.
            bonds = _levels(p for p in linked if p.smi is not None and p.smi.startswith("NV"))
            return f"{head}, fully NVLinked{f' ({bonds})' if bonds else ''}"
        if linked:
            return (
                f"{head}, NVLink between {len(linked)} of {total} pairs, "
                f"PCIe{f' ({pcie})' if pcie else ''} between the others"
            )
        unknown = sum(1 for p in pairs if p is None or p.linked is None)
        if unknown == total:
            return f"{head}, NVLink unknown{f' (PCIe: {pcie})' if pcie else ''}"
        if unknown:
            return (
                f"{head}, no NVLink between the {total - unknown} pairs read"
                f"{f' ({pcie})' if pcie else ''}, {unknown} unknown"
            )
        return f"{head}, PCIe only{f' ({pcie} between pairs)' if pcie else ''}, no NVLink"

    def to_json(self) -> dict[str, Any]:
        return {
            "gpus": self.gpus,
            "source": self.source,
            "summary": self.summary(),
            "nvlink_links": list(self.nvlink_links),
            "pairs": [p.to_json() for p in self.pairs],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Topology:
        return cls(
            gpus=int(raw["gpus"]),
            pairs=tuple(PairLink.from_json(p) for p in raw.get("pairs") or ()),
            nvlink_links=tuple(int(n) for n in raw.get("nvlink_links") or ()),
            source=str(raw.get("source") or "nvml"),
        )

    @classmethod
    def from_smi(cls, text: str, source: str = "nvidia-smi") -> Topology:
        """A topology from ``nvidia-smi topo -m`` text alone (P2P status unknown)."""
        cells = parse_topo_matrix(text)
        gpus = 1 + max((max(a, b) for a, b in cells), default=count_rows(text) - 1)
        pairs = tuple(PairLink(a, b, smi=cell) for (a, b), cell in sorted(cells.items()))
        return cls(gpus=gpus, pairs=pairs, source=source)


def _levels(pairs: Iterable[PairLink]) -> str:
    """The distinct words of ``pairs``, most common first, joined by "/"."""
    counts: dict[str, int] = {}
    for p in pairs:
        if p.level is not None:
            counts[p.level] = counts.get(p.level, 0) + 1
    return "/".join(sorted(counts, key=lambda w: (-counts[w], w)))


@dataclass(frozen=True)
class TopologyRead:
    """The topology, or None with the reason it could not be read."""

    topology: Topology | None
    reason: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    """What was read only in part (nvidia-smi missing or failing): said, not fatal."""

    def describe(self) -> str:
        if self.topology is None:
            return f"topology unknown: {self.reason}"
        return f"{self.topology.summary()} (read from {self.topology.source})"

    def to_json(self) -> dict[str, Any]:
        if self.topology is None:
            return {"unavailable": self.reason}
        return self.topology.to_json()

    @classmethod
    def from_json(cls, raw: Mapping[str, Any] | None) -> TopologyRead | None:
        if not raw:
            return None
        if "gpus" not in raw:
            return cls(None, str(raw.get("unavailable") or "not read"))
        return cls(Topology.from_json(raw))


# --- NVML -------------------------------------------------------------------------------------


def read_topology(nvml: Any = None, run_smi: SmiRunner | None = run_nvidia_smi) -> TopologyRead:
    """This host's topology from NVML (and nvidia-smi where it exists); never raises.

    ``nvml`` is the ``pynvml`` module (a fake in tests); ``run_smi`` returns the text of
    ``nvidia-smi topo -m`` or None (``None``: not asked).
    """
    if nvml is None:
        try:
            import pynvml  # noqa: PLC0415 - an optional capability, probed here
        except ImportError:
            return TopologyRead(None, "nvidia-ml-py not installed")
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - every NVML start failure means "no GPUs"
        reason = init_failure_reason(nvml, exc)
        return TopologyRead(None, reason.removesuffix(": GPU telemetry off"))
    try:
        topology = _read_nvml(nvml)
    except Exception as exc:  # noqa: BLE001 - a driver that cannot count its GPUs
        return TopologyRead(None, f"NVML cannot list the GPUs ({exc})")
    finally:
        with contextlib.suppress(Exception):  # nothing more to do at shutdown
            nvml.nvmlShutdown()
    if topology.gpus < 1:
        return TopologyRead(None, "no NVIDIA GPU")
    notes: list[str] = []
    text = run_smi() if run_smi is not None and topology.gpus > 1 else None
    if text is not None:
        cells = parse_topo_matrix(text)
        if cells:
            pairs = tuple(_with_smi(p, cells.get((p.a, p.b))) for p in topology.pairs)
            topology = Topology(topology.gpus, pairs, topology.nvlink_links, "nvml+nvidia-smi")
        else:
            notes.append("nvidia-smi topo -m printed no GPU matrix")
    elif run_smi is not None and topology.gpus > 1:
        notes.append("nvidia-smi topo -m not available: NVML's answers alone")
    return TopologyRead(topology, notes=tuple(notes))


def _with_smi(pair: PairLink, cell: str | None) -> PairLink:
    return PairLink(pair.a, pair.b, pair.pcie, cell, pair.nvlink, pair.p2p_read, pair.p2p_write)


def _read_nvml(nvml: Any) -> Topology:
    count = int(nvml.nvmlDeviceGetCount())
    handles = [_guarded(nvml.nvmlDeviceGetHandleByIndex, i) for i in range(count)]
    pairs = []
    for a in range(count):
        for b in range(a + 1, count):
            ha, hb = handles[a], handles[b]
            if ha is None or hb is None:
                pairs.append(PairLink(a, b))
                continue
            level = _guarded(getattr(nvml, "nvmlDeviceGetTopologyCommonAncestor", None), ha, hb)
            pairs.append(
                PairLink(
                    a,
                    b,
                    pcie=PCIE_LEVELS.get(int(level)) if level is not None else None,
                    nvlink=_p2p(nvml, ha, hb, "NVML_P2P_CAPS_INDEX_NVLINK", _P2P_NVLINK),
                    p2p_read=_p2p(nvml, ha, hb, "NVML_P2P_CAPS_INDEX_READ", _P2P_READ),
                    p2p_write=_p2p(nvml, ha, hb, "NVML_P2P_CAPS_INDEX_WRITE", _P2P_WRITE),
                )
            )
    links = tuple(_active_links(nvml, h) for h in handles)
    return Topology(gpus=count, pairs=tuple(pairs), nvlink_links=links, source="nvml")


def _guarded(fn: Callable[..., Any] | None, *args: Any) -> Any | None:
    """One NVML call; None when the entry point is missing or the call fails."""
    if fn is None:
        return None
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - an unanswered question is "unknown"
        log.debug("NVML %s failed: %r", getattr(fn, "__name__", fn), exc)
        return None


def _p2p(nvml: Any, ha: Any, hb: Any, name: str, fallback: int) -> bool | None:
    status = _guarded(
        getattr(nvml, "nvmlDeviceGetP2PStatus", None), ha, hb, getattr(nvml, name, fallback)
    )
    if status is None:
        return None
    return int(status) == int(getattr(nvml, "NVML_P2P_STATUS_OK", _P2P_OK))


def _active_links(nvml: Any, handle: Any) -> int:
    fn = getattr(nvml, "nvmlDeviceGetNvLinkState", None)
    if fn is None or handle is None:
        return 0
    enabled = getattr(nvml, "NVML_FEATURE_ENABLED", 1)
    active = 0
    for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))):
        try:
            if fn(handle, link) == enabled:
                active += 1
        except Exception:  # noqa: BLE001 - past the last link, or no NVLink at all
            break
    return active


# --- given by hand ----------------------------------------------------------------------------


def load_topology_file(path: Path, key: str = "topology") -> Topology:
    """A topology from a file: ``Topology.to_json`` JSON or saved ``nvidia-smi topo -m``."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(
            f"{key}: cannot read {path} ({exc.strerror}); give a file with the output of "
            "`nvidia-smi topo -m` or a topology JSON"
        ) from None
    source = f"file {path}"
    if text.lstrip().startswith("{"):
        try:
            return Topology.from_json({**json.loads(text), "source": source})
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{key}: {path} is not a topology JSON ({exc})") from None
    topology = Topology.from_smi(text, source=source)
    if topology.gpus < 1 or (topology.gpus > 1 and not topology.pairs):
        raise ConfigError(
            f"{key}: {path} holds no GPU matrix; save the output of `nvidia-smi topo -m` there"
        )
    return topology
