"""The capacity benchmark's streaming servers as test fixtures: started, found, stopped."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import types
from pathlib import Path

import httpx

CAPACITY_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "client_capacity.py"


def capacity_module() -> types.ModuleType:
    """benchmarks/client_capacity.py, imported (it is a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("client_capacity", CAPACITY_SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["client_capacity"] = module
    spec.loader.exec_module(module)
    return module


class StreamingServer:
    """A server process that prints ``listening on 127.0.0.1:PORT`` once it accepts."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("listening on 127.0.0.1:"):
            self.stop()
            raise AssertionError(f"{argv[0]} did not start: {line!r}")
        self.url = "http://127.0.0.1:" + line.rsplit(":", 1)[1].strip()

    @classmethod
    def python(cls, first_ms: float, interval_ms: float) -> StreamingServer:
        """benchmarks/client_capacity.py's server, paced (or flooding at interval 0)."""
        return cls(
            [
                sys.executable,
                str(CAPACITY_SCRIPT),
                "serve",
                "--port",
                "0",
                "--first-ms",
                str(first_ms),
                "--interval-ms",
                str(interval_ms),
            ]
        )

    def truth(self) -> dict:
        """What the server wrote, by its own record."""
        return httpx.get(self.url + "/truth", timeout=10).json()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        if self.proc.stdout:
            self.proc.stdout.close()
