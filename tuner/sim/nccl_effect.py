"""How the NCCL variables change a decode step's all-reduce time, and the band that bounds it.

Each variable nudges the all-reduce part by a small relative amount, weighted between small
messages (latency-bound, at small batch) and large ones (bandwidth-bound); the speed model
(:mod:`tuner.sim.model`) then clamps the whole step's change to the band below.
"""

from __future__ import annotations

from tuner.sim.nccl import NcclEnv

# NCCL's effect on a whole step is clamped to this band: on a PCIe box like the calibrated
# one, tuning NCCL is worth 1-2% at best (calibration.yaml: the tuned stack is within noise
# of the defaults).
NCCL_STEP_EFFECT_MIN = -0.015
NCCL_STEP_EFFECT_MAX = 0.02


def small_weight(batch: int) -> float:
    """1 at batch 1, falling off by batch ~32: small all-reduce messages are latency-bound."""
    return 1.0 / (1.0 + batch / 32.0)


def _select(table: tuple[tuple[int, float], ...], value: int) -> float:
    """The delta of the first (upper bound, delta) row whose bound is >= value."""
    for bound, delta in table:
        if value <= bound:
            return delta
    return table[-1][1]


_PROTO_DELTA = {  # relative change of all-reduce time: (small messages, large messages)
    "ll": (-0.006, 0.03),  # lowest latency; halves bandwidth on large messages
    "ll128": (-0.004, -0.003),
    "simple": (0.025, -0.002),  # high latency, best bandwidth
}
_ALGO_DELTA = {"tree": 0.015, "ring": 0.0}  # on a single PCIe node, tree is a slow chain
_MAX_CH = ((1, 0.04), (2, 0.012), (4, 0.004), (8, 0.0), (16, -0.003), (64, -0.001))
_NTHREADS = ((64, 0.006), (128, 0.003), (256, 0.001), (448, 0.002), (512, 0.0))


def nccl_comm_factor(nccl: NcclEnv, batch: int) -> float:
    """Multiplier on all-reduce time from the NCCL/CUDA variables (1.0 when all unset)."""
    ws = small_weight(batch)
    delta = 0.0
    protos = nccl.allreduce_protos()
    if protos:
        # One protocol forced: its full effect. A list: NCCL still chooses among them, so
        # only half the members' mean effect is felt.
        deltas = [ws * _PROTO_DELTA[p][0] + (1 - ws) * _PROTO_DELTA[p][1] for p in protos]
        delta += deltas[0] if len(deltas) == 1 else 0.5 * sum(deltas) / len(deltas)
    algos = nccl.allreduce_algos()
    if algos:
        usable = [_ALGO_DELTA[a] for a in algos if a in _ALGO_DELTA]
        if usable:
            delta += min(usable)  # NCCL picks the better of the allowed algorithms
    if nccl.max_nchannels is not None:
        delta += _select(_MAX_CH, nccl.max_nchannels)
    if nccl.min_nchannels is not None and nccl.min_nchannels >= 16:
        delta += 0.004  # forcing many channels adds launch overhead to small messages
    if nccl.buffsize is not None:
        mib = nccl.buffsize / 2**20
        if mib < 1:
            delta += 0.008
        elif mib < 4:
            delta += 0.002
        elif mib > 64:
            delta += 0.001
        elif mib > 4:
            delta -= 0.0015
    if nccl.nthreads is not None:
        delta += _select(_NTHREADS, nccl.nthreads)
    if nccl.cuda_device_max_connections is not None:
        delta += -0.0015 if nccl.cuda_device_max_connections == 1 else 0.001
    return 1.0 + delta
