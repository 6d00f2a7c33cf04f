"""`tuner probe membw` on a real GPU: where NVML finds one; measured with torch when it is
installed with CUDA, NVML's theoretical figure otherwise."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tuner.telemetry.gpu import open_gpu_backend

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(120)]


def test_the_command_gives_each_gpu_s_bandwidth_below_nvml_s_peak() -> None:
    backend = open_gpu_backend()
    if not backend.available:
        pytest.skip(backend.reason)
    try:
        peaks = [backend.info(i).memory_bandwidth_gbps for i in range(backend.device_count())]
    finally:
        backend.close()
    run = subprocess.run(
        [sys.executable, "-m", "tuner", "probe", "membw", "--size", "512M", "--repeats", "3"],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout.strip().splitlines()[-1])
    assert doc["source"] in ("torch", "nvml")
    assert len(doc["gpus"]) == len(peaks)
    for gpu, peak in zip(doc["gpus"], peaks, strict=True):
        assert gpu["gbps"] > 50  # any data-centre or workstation GPU of the last decade
        if peak is not None:
            # A copy cannot beat the bus; NVML's own figure is the peak itself.
            assert gpu["gbps"] <= peak * 1.02
            if doc["source"] == "torch":
                assert gpu["gbps"] > 0.4 * peak
    assert doc["memory_bandwidth_gbps"] == min(g["gbps"] for g in doc["gpus"])
    print(json.dumps(doc))
