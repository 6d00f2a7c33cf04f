"""NCCL's transport variables judged together: settings that overlap or starve the GPUs.

Each variable alone is checked by :mod:`tuner.check.nccl`; these rules need two of them.
NCCL reads ``NCCL_P2P_DISABLE=1`` as ``NCCL_P2P_LEVEL=LOC`` and then ignores the level
(src/graph/paths.cc ``ncclGetLevel``), so a space that sets both measures one setting
under two names. ``NCCL_SHM_DISABLE=1`` removes the host-memory transport NCCL uses where
P2P is off, leaving the network transport (IB or TCP sockets) between GPUs of one box
(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html, NCCL_SHM_DISABLE).
"""

from __future__ import annotations

from tuner.check.report import Findings
from tuner.check.values import produced_env
from tuner.nccl import DEFAULT_P2P_LEVEL, p2p_level_of
from tuner.space.spec import Space

_VARIABLES = ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SHM_DISABLE")


def check_nccl_transport(space: Space, found: Findings) -> None:
    """Warn where the space's P2P and SHM settings overlap or leave only the network."""
    values: dict[str, list[tuple[str, str]]] = {name: [] for name in _VARIABLES}
    for key, name, value in produced_env(space):
        if name in values and value is not None:
            values[name].append((key, value.strip()))
    disables = [
        (key, f"NCCL_P2P_DISABLE={value}")
        for key, value in values["NCCL_P2P_DISABLE"]
        if p2p_level_of({"NCCL_P2P_DISABLE": value}) == "LOC"
    ]
    if disables and values["NCCL_P2P_LEVEL"]:
        key, level = values["NCCL_P2P_LEVEL"][0]
        found.add(
            "warning",
            key,
            f"NCCL_P2P_DISABLE=1 ({disables[0][0]}) overrides NCCL_P2P_LEVEL={level}: NCCL "
            "reads the level only when P2P_DISABLE is not 1, so trials with both measure P2P "
            "off twice; NCCL_P2P_DISABLE=1 is NCCL_P2P_LEVEL=LOC: keep one of the two",
        )
    p2p_off = disables + [
        (key, f"NCCL_P2P_LEVEL={value}")
        for key, value in values["NCCL_P2P_LEVEL"]
        if p2p_level_of({"NCCL_P2P_LEVEL": value}) == "LOC"
    ]
    shm_off = [key for key, value in values["NCCL_SHM_DISABLE"] if value == "1"]
    if shm_off and p2p_off:
        found.add(
            "warning",
            shm_off[0],
            f"NCCL_SHM_DISABLE=1 with P2P off ({p2p_off[0][1]}, {p2p_off[0][0]}): NCCL then "
            "has neither P2P nor shared memory between the GPUs and sends all their traffic "
            "through the network transport (IB, or TCP sockets on a box without it), far "
            "slower",
        )
    elif shm_off:
        found.add(
            "warning",
            shm_off[0],
            "NCCL_SHM_DISABLE=1 only matters where NCCL does not use P2P, and there it sends "
            "the GPUs' traffic over the network (TCP sockets without IB): NCCL's default "
            f"stops P2P beyond {DEFAULT_P2P_LEVEL} (GPUs that talk through the CPU), and GPUs "
            "without P2P (GeForce) never use it",
        )
