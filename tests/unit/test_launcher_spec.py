"""LaunchSpec (environment, URL, validation), ports, CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.fakes import FakeGpuBackend
from tuner.errors import LaunchError
from tuner.launcher import LaunchSpec, ServerProcess, free_port, parse_visible_devices, port_in_use


def spec(**overrides: object) -> LaunchSpec:
    fields: dict[str, object] = {"argv": ["vllm", "serve"], "port": 8000, "log_path": "x.log"}
    fields.update(overrides)
    return LaunchSpec(**fields)  # type: ignore[arg-type]


def test_child_env_unsets_then_sets() -> None:
    s = spec(env={"NCCL_PROTO": "LL", "A": "1"}, unset=frozenset({"NCCL_ALGO", "MISSING"}))
    env = s.child_env({"NCCL_ALGO": "Tree", "A": "0", "PATH": "/bin"})
    assert env == {"A": "1", "NCCL_PROTO": "LL", "PATH": "/bin"}


def test_spec_normalises_and_validates() -> None:
    s = spec(argv=("a", 1), env={"N": 4}, unset={"X"}, health_path="health")  # type: ignore[arg-type]
    assert s.argv == ["a", "1"] and s.env == {"N": "4"} and s.unset == frozenset({"X"})
    assert isinstance(s.log_path, Path)
    assert s.health_url == "http://127.0.0.1:8000/health"
    with pytest.raises(ValueError, match="both set and unset"):
        spec(env={"X": "1"}, unset=frozenset({"X"}))
    with pytest.raises(ValueError, match="empty"):
        spec(argv=[])
    with pytest.raises(ValueError, match="port"):
        spec(port=0)
    with pytest.raises(ValueError, match="stop_timeout_s"):
        spec(stop_timeout_s=0)


@pytest.mark.parametrize(
    ("host", "url"),
    [("0.0.0.0", "http://127.0.0.1:8000/health"), ("::", "http://[::1]:8000/health"),
     ("10.0.0.2", "http://10.0.0.2:8000/health")],
)  # fmt: skip
def test_health_url(host: str, url: str) -> None:
    assert spec(host=host).health_url == url


def test_free_port_and_port_in_use() -> None:
    port = free_port()
    assert not port_in_use("127.0.0.1", port)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        assert port_in_use("127.0.0.1", port)


def test_start_refuses_a_taken_port(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        server = ServerProcess(spec(port=port, log_path=tmp_path / "s.log"))
        with pytest.raises(LaunchError, match=f"port {port} on 127.0.0.1 is already in use"):
            server.start()
    assert server.pid is None
    assert server.stop().clean  # a never-started server stops trivially


def test_missing_command_is_a_launch_error(tmp_path: Path) -> None:
    server = ServerProcess(spec(argv=["/nonexistent/vllm"], port=free_port(),
                                log_path=tmp_path / "s.log"))  # fmt: skip
    with pytest.raises(LaunchError, match="/nonexistent/vllm: no such file"):
        server.start()


def test_parse_visible_devices() -> None:
    gpu = FakeGpuBackend()
    assert parse_visible_devices(None) is None
    assert parse_visible_devices("") is None
    assert parse_visible_devices("0, 1") == [0, 1]
    assert parse_visible_devices("GPU-fake-1,0", gpu) == [1, 0]
    assert parse_visible_devices("GPU-fake-1", None) is None
    assert parse_visible_devices("MIG-xyz", gpu) is None
