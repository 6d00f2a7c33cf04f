"""Which NCCL transport the simulated GPUs use, and what it and the buffer size cost.

NCCL picks P2P between two GPUs when the driver allows it and their path is within the P2P
level: ``NCCL_P2P_DISABLE=1`` means LOC (never), else ``NCCL_P2P_LEVEL``, else NCCL's own
PXB (src/graph/paths.cc ``ncclTopoCheckP2p``). Without P2P it uses shared host memory, and
with ``NCCL_SHM_DISABLE=1`` too the network (https://docs.nvidia.com/deeplearning/nccl/
user-guide/docs/env.html). The costs and the buffer gain are the profile's
(:class:`~tuner.sim.profiles.Interconnect`); this module only applies them. Both act outside
the model's NCCL clamp (a transport can be far slower than tuning's 1-2%), and both are
relative to the profile's own default, at which its throughput table was measured.
"""

from __future__ import annotations

import math

from tuner.nccl import DEFAULT_BUFFSIZE, DEFAULT_P2P_LEVEL, path_at_most
from tuner.sim.nccl import NcclEnv
from tuner.sim.profiles import Interconnect

P2P, SHM, NET = "P2P", "SHM", "NET"


def transport(interconnect: Interconnect, nccl: NcclEnv) -> str:
    """P2P, SHM or NET: what NCCL uses between the ring's farthest GPUs with these settings."""
    level = nccl.p2p_level or DEFAULT_P2P_LEVEL
    if interconnect.cuda_p2p and path_at_most(interconnect.path, level):
        return P2P
    return NET if nccl.shm_disable else SHM


def _weighted(pair: tuple[float, float], small_weight: float) -> float:
    return small_weight * pair[0] + (1.0 - small_weight) * pair[1]


def _cost(interconnect: Interconnect, kind: str, small_weight: float) -> float:
    """All-reduce time over ``kind`` relative to P2P."""
    if kind == P2P:
        return 1.0
    pair = interconnect.shm_cost if kind == SHM else interconnect.socket_cost
    return 1.0 + _weighted(pair, small_weight)


def transport_factor(interconnect: Interconnect, nccl: NcclEnv, small_weight: float) -> float:
    """All-reduce time with these settings' transport over the default's (1.0: the same)."""
    default = transport(interconnect, NcclEnv())
    chosen = transport(interconnect, nccl)
    if chosen == default:
        return 1.0
    return _cost(interconnect, chosen, small_weight) / _cost(interconnect, default, small_weight)


def _ring_simple_possible(nccl: NcclEnv) -> bool:
    """NCCL_BUFFSIZE sizes the Simple protocol's ring buffers: it acts only where NCCL may
    still run all-reduce as a ring with Simple."""
    algos, protos = nccl.allreduce_algos(), nccl.allreduce_protos()
    return (algos is None or "ring" in algos) and (protos is None or "simple" in protos)


def buffer_factor(interconnect: Interconnect, nccl: NcclEnv, small_weight: float) -> float:
    """All-reduce time with NCCL_BUFFSIZE below the default, on a box where that helps:
    the profile's full gain at 1 MiB or less, half at 2 MiB, none from 4 MiB up."""
    if nccl.buffsize is None or not _ring_simple_possible(nccl):
        return 1.0
    share = min(1.0, max(0.0, math.log2(DEFAULT_BUFFSIZE / nccl.buffsize) / 2.0))
    return 1.0 - share * _weighted(interconnect.small_buffer_gain, small_weight)


_VIA = {P2P: "P2P/CUMEM", SHM: "SHM/direct/direct", NET: "NET/Socket/0"}


def channel_line(interconnect: Interconnect, nccl: NcclEnv) -> str:
    """The text of NCCL's INFO line naming a ring channel's transport, as NCCL logs it."""
    return f"NCCL INFO Channel 00/0 : 0[0] -> 1[1] via {_VIA[transport(interconnect, nccl)]}"
