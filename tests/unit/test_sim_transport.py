"""The simulator's NCCL transport knobs: NCCL_P2P_LEVEL / NCCL_P2P_DISABLE / NCCL_SHM_DISABLE
and the profile's NCCL_BUFFSIZE gain, in the server's speed model and the sim's probe alike."""

from __future__ import annotations

import json

import pytest

from tuner.sim import PROFILES, SimSettings, parse_settings, step_time
from tuner.sim.model import relative_speed
from tuner.sim.nccl import NcclEnv, parse_nccl_env
from tuner.sim.probe import allreduce_us, geometry, main
from tuner.sim.profiles import Interconnect
from tuner.sim.transport import channel_line, transport

KIMI = "kimi-k2.5-int4-tp8"
CONSUMER = "consumer-pcie"
SIZE_1 = 7168 * 2
MIB = 2**20
P2P_OFF = [
    {"NCCL_P2P_LEVEL": "LOC"},
    {"NCCL_P2P_DISABLE": "1"},
    {"NCCL_P2P_LEVEL": "PIX"},  # nearer than the box's PXB path: no P2P either
    {"NCCL_P2P_LEVEL": "NVL"},  # no NVLink on this box
    {"NCCL_P2P_LEVEL": "1"},  # the old number for PIX
]
P2P_ON = [
    {"NCCL_P2P_LEVEL": "PXB"},
    {"NCCL_P2P_LEVEL": "PHB"},
    {"NCCL_P2P_LEVEL": "SYS"},
    {"NCCL_P2P_LEVEL": "2"},
    {"NCCL_P2P_LEVEL": "pix"},  # NCCL ignores lower case: its default applies
    {"NCCL_P2P_DISABLE": "0"},
    {"NCCL_SHM_DISABLE": "1"},  # P2P is on, so SHM was never used
]


def _sim(profile: str, env: dict[str, str]) -> SimSettings:
    return parse_settings(["--profile", profile, "--port", "1"], env)


def _speeds(profile: str, env: dict[str, str]) -> list[float]:
    return [relative_speed(profile, _sim(profile, env), c) for c in (1, 8, 256)]


@pytest.mark.parametrize("env", P2P_OFF)
def test_p2p_off_on_kimi_goes_through_host_memory_and_is_slower(env: dict[str, str]) -> None:
    speeds = _speeds(KIMI, env)
    assert all(0.8 < s < 0.95 for s in speeds), speeds
    assert speeds == sorted(speeds, reverse=True)  # large messages lose more bandwidth
    assert "via SHM/direct/direct" in channel_line(
        PROFILES[KIMI].interconnect, _sim(KIMI, env).nccl
    )


@pytest.mark.parametrize("env", P2P_ON)
def test_p2p_levels_that_keep_p2p_change_nothing_on_kimi(env: dict[str, str]) -> None:
    assert _speeds(KIMI, env) == [1.0, 1.0, 1.0]
    assert "via P2P/CUMEM" in channel_line(PROFILES[KIMI].interconnect, _sim(KIMI, env).nccl)


@pytest.mark.parametrize("profile", [KIMI, CONSUMER])
def test_no_p2p_and_no_shm_leaves_sockets_much_slower(profile: str) -> None:
    env = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}
    sockets = _speeds(profile, env)
    shm = _speeds(profile, {"NCCL_P2P_DISABLE": "1"})
    assert all(s < 0.5 for s in sockets), sockets
    assert all(a < b for a, b in zip(sockets, shm, strict=True))
    assert "via NET/Socket/0" in channel_line(
        PROFILES[profile].interconnect, _sim(profile, env).nccl
    )


@pytest.mark.parametrize("env", [*P2P_OFF, *P2P_ON[:-1]])
def test_p2p_knobs_do_nothing_where_the_gpus_have_no_p2p(env: dict[str, str]) -> None:
    assert _speeds(CONSUMER, env) == [1.0, 1.0, 1.0]


def test_consumer_shm_disable_alone_falls_back_to_sockets() -> None:
    assert all(s < 0.5 for s in _speeds(CONSUMER, {"NCCL_SHM_DISABLE": "1"}))


def test_a_1_mib_buffer_helps_the_consumer_ring_slightly_at_decode_more_at_large_batches() -> None:
    one, two = (
        _speeds(CONSUMER, {"NCCL_BUFFSIZE": str(MIB)}),
        _speeds(CONSUMER, {"NCCL_BUFFSIZE": str(2 * MIB)}),
    )
    assert 1.003 < one[0] < 1.015  # one stream: slight
    assert one == sorted(one) and one[-1] > 1.04  # grows with the message size
    assert all(1.0 < b < a for a, b in zip(one, two, strict=True))  # 2 MiB: half-way
    for big in (8 * MIB, 16 * MIB):  # larger than the default: nothing beyond noise
        assert all(abs(s - 1.0) < 0.002 for s in _speeds(CONSUMER, {"NCCL_BUFFSIZE": str(big)}))


@pytest.mark.parametrize("env", [{"NCCL_ALGO": "allreduce:tree"}, {"NCCL_PROTO": "LL"}])
def test_the_buffer_gain_needs_the_ring_with_simple(env: dict[str, str]) -> None:
    # NCCL_BUFFSIZE sizes Simple's buffers: with tree or LL forced it has nothing to act on.
    base = step_time(CONSUMER, _sim(CONSUMER, env), 256)
    small = step_time(CONSUMER, _sim(CONSUMER, {**env, "NCCL_BUFFSIZE": str(MIB)}), 256)
    kimi_like = step_time(KIMI, _sim(KIMI, {**env, "NCCL_BUFFSIZE": str(MIB)}), 256)
    assert small / base == pytest.approx(kimi_like / step_time(KIMI, _sim(KIMI, env), 256))


@pytest.mark.parametrize("size", [MIB, 2 * MIB, 8 * MIB, 16 * MIB])
def test_kimi_keeps_buffer_sizes_within_noise(size: int) -> None:
    # calibration.yaml: every NCCL tuning of the seeds' box was within noise.
    assert all(abs(s - 1.0) < 0.005 for s in _speeds(KIMI, {"NCCL_BUFFSIZE": str(size)}))


@pytest.mark.parametrize("profile", [KIMI, CONSUMER, "flat"])
@pytest.mark.parametrize(
    "env",
    [
        {"NCCL_P2P_LEVEL": "LOC"},
        {"NCCL_P2P_LEVEL": "PIX", "NCCL_SHM_DISABLE": "1"},
        {"NCCL_BUFFSIZE": str(MIB)},
        {"NCCL_BUFFSIZE": str(MIB), "NCCL_P2P_DISABLE": "1", "NCCL_PROTO": "LL"},
    ],
)
@pytest.mark.parametrize("batch", [1, 8, 256])
def test_the_probe_moves_as_the_server_does(profile: str, env: dict[str, str], batch: int) -> None:
    _, layers = geometry(PROFILES[profile])
    size = SIZE_1 * batch
    probe = allreduce_us(profile, _sim(profile, env), size) - allreduce_us(
        profile, _sim(profile, {}), size
    )
    step = step_time(profile, _sim(profile, env), batch) - step_time(
        profile, _sim(profile, {}), batch
    )
    assert 2 * layers * probe * 1e-6 == pytest.approx(step, rel=1e-9, abs=1e-12)


def test_flat_ignores_the_transport() -> None:
    assert _speeds("flat", {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}) == [1.0, 1.0, 1.0]


def test_the_probe_command_reads_the_transport_from_its_environment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def probe(env: dict[str, str]) -> float:
        assert main(["--sizes", str(SIZE_1), "--noise", "0", "--seed", "1"], env) == 0
        return float(json.loads(capsys.readouterr().out)["sizes"][str(SIZE_1)])

    default, shm, sockets = (
        probe({}),
        probe({"NCCL_P2P_LEVEL": "LOC"}),
        probe({"NCCL_P2P_LEVEL": "LOC", "NCCL_SHM_DISABLE": "1"}),
    )
    assert default < shm < sockets


@pytest.mark.parametrize(
    ("env", "level", "shm_disable", "warned"),
    [
        ({"NCCL_P2P_DISABLE": "1", "NCCL_P2P_LEVEL": "SYS"}, "LOC", False, False),  # disable wins
        ({"NCCL_P2P_DISABLE": "0", "NCCL_P2P_LEVEL": "SYS"}, "SYS", False, False),
        ({"NCCL_P2P_LEVEL": "3"}, "PHB", False, False),  # old numbering
        ({"NCCL_P2P_LEVEL": "9"}, "SYS", False, False),  # clamped to the last old number
        ({"NCCL_P2P_LEVEL": "phb"}, None, False, True),  # NCCL compares case-sensitively
        ({"NCCL_P2P_LEVEL": "FAST"}, None, False, True),
        ({"NCCL_SHM_DISABLE": "1"}, None, True, False),
        ({"NCCL_SHM_DISABLE": "0"}, None, False, False),
    ],
)
def test_the_sim_reads_the_transport_variables_as_nccl_does(
    env: dict[str, str], level: str | None, shm_disable: bool, warned: bool
) -> None:
    nccl, warnings = parse_nccl_env(env)
    assert (nccl.p2p_level, nccl.shm_disable) == (level, shm_disable)
    assert bool(warnings) == warned
    assert nccl.as_json()["p2p_level"] == level


@pytest.mark.parametrize(
    ("level", "expected"),
    [(None, "SHM"), ("PIX", "SHM"), ("PXB", "SHM"), ("PHB", "SHM"), ("SYS", "P2P"), ("LOC", "SHM")],
)
def test_a_level_nearer_than_the_path_means_no_p2p(level: str | None, expected: str) -> None:
    # GPUs on two CPUs that allow P2P: NCCL's own cutoff (PXB) keeps it off; only SYS reaches.
    cross_socket = Interconnect(path="SYS", cuda_p2p=True)
    assert transport(cross_socket, NcclEnv(p2p_level=level)) == expected
    assert transport(cross_socket, NcclEnv(p2p_level=level, shm_disable=True)) == (
        "P2P" if expected == "P2P" else "NET"
    )
