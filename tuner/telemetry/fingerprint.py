"""A host's hardware fingerprint: what must match for two hosts' launches to be one population.

Workers on several hosts share a study only if their hosts are alike: the same GPU model
and count, driver, interconnect, NCCL and vLLM versions. A throughput measured on an H100
box is not a sample of the same thing as one measured on an H200 box. The facts come from
the inventory (tuner/telemetry/inventory.py); without a GPU the CPU model and count stand
in for the GPUs, so the simulator's studies are fingerprinted too. The host name is not
part of it: identical boxes have the same fingerprint. NCCL's and vLLM's versions are
those installed in tuner's own Python environment (where vLLM is usually installed); a
server run from another environment is not seen, and the facts then say None.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.telemetry.gpu import GpuBackend
from tuner.telemetry.inventory import Inventory, collect_inventory
from tuner.telemetry.versions import NCCL_DISTRIBUTIONS, VLLM_DISTRIBUTIONS, installed_version


@dataclass(frozen=True)
class Fingerprint:
    """The facts that make two hosts alike, and their short digest."""

    facts: Mapping[str, Any]

    @property
    def digest(self) -> str:
        """12 hex digits of the facts' SHA-256: the name a study's launches carry."""
        text = json.dumps(dict(self.facts), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def describe(self) -> str:
        """One line, e.g. ``8 x NVIDIA H200, driver 570.86, NVLink, NCCL 2.26.2, vLLM 0.11.0``."""
        f = self.facts
        if f.get("gpu_count"):
            hardware = (
                f"{f['gpu_count']} x {f.get('gpu_model')}, driver {f.get('driver') or '?'}, "
                f"{'NVLink' if f.get('interconnect') == 'nvlink' else 'PCIe'}"
            )
        else:
            hardware = f"no GPU, {f.get('cpu_count') or '?'} x {f.get('cpu_model') or '?'}"
        return f"{hardware}, NCCL {f.get('nccl') or '-'}, vLLM {f.get('vllm') or '-'}"

    def differences(self, other: Fingerprint) -> list[str]:
        """``key: ours != theirs`` for each fact that differs."""
        keys = sorted(set(self.facts) | set(other.facts))
        return [
            f"{k}: {self.facts.get(k)!r} != {other.facts.get(k)!r}"
            for k in keys
            if self.facts.get(k) != other.facts.get(k)
        ]


def fingerprint_of(inventory: Inventory) -> Fingerprint:
    """The fingerprint of an inventory, with NCCL and vLLM as installed beside tuner."""
    facts: dict[str, Any] = {
        "gpu_count": inventory.gpu_count,
        "nccl": inventory.nccl_version or installed_version(NCCL_DISTRIBUTIONS),
        "vllm": inventory.server_version or installed_version(VLLM_DISTRIBUTIONS),
    }
    if inventory.gpus:
        facts.update(
            gpu_model=", ".join(sorted(set(inventory.gpu_names))),
            driver=inventory.driver_version,
            cuda=inventory.cuda_driver_version,
            interconnect="nvlink" if inventory.nvlink else "pcie",
        )
    else:  # no GPU facts (the simulator, a CPU build): the CPU stands in for them
        facts.update(cpu_model=inventory.cpu_model, cpu_count=inventory.cpu_count)
    return Fingerprint(facts=facts)


def host_fingerprint(gpu: GpuBackend) -> Fingerprint:
    """This host's fingerprint (never raises: a fact that cannot be read is None)."""
    return fingerprint_of(collect_inventory(gpu))
