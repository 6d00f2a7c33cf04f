"""summarize_gpu: busy and throttling GPUs, energy from the counter or from power, nothing."""

from __future__ import annotations

import json

import pytest

from tests.fakes import FakeGpu, FakeGpuBackend
from tuner.telemetry import GpuSummary, summarize_gpu
from tuner.telemetry.gpu import GpuSample
from tuner.telemetry.gpu_summary import average_power_w


def series(
    index: int,
    powers: list[float],
    *,
    dt: float = 1.0,
    t0: float = 1000.0,
    counter: bool = True,
    util: float = 90.0,
    reasons: tuple[str, ...] = (),
) -> list[GpuSample]:
    """Samples every ``dt`` seconds; the energy counter integrates the power exactly."""
    samples = []
    energy_mj = 5_000_000.0
    for i, p in enumerate(powers):
        if i:
            energy_mj += (powers[i - 1] + p) / 2 * dt * 1000.0
        samples.append(
            GpuSample(
                index=index,
                time_s=t0 + i * dt,
                util_pct=util,
                memory_used_mib=80_000.0 + i,
                power_w=p,
                energy_mj=energy_mj if counter else None,
                temperature_c=60.0 + i,
                sm_clock_mhz=2000.0,
                pcie_tx_kbps=100.0 * (index + 1),
                pcie_rx_kbps=200.0,
                throttle_reasons=reasons,
            )
        )
    return samples


def test_no_samples_gives_a_summary_of_nones() -> None:
    summary = summarize_gpu([], output_tokens=1000, duration_s=10.0)
    assert summary == GpuSummary()
    assert summary.energy_j is None and summary.j_per_token is None
    assert summary.util_mean_pct is None and summary.throttled is None
    assert summary.throttle_reasons == frozenset()
    json.dumps(summary.to_dict())


def test_energy_from_the_counter_over_the_level() -> None:
    samples = series(0, [300.0] * 11)  # 10 s span at 300 W
    summary = summarize_gpu(samples, output_tokens=1500, duration_s=10.0)
    assert summary.energy_source == "counter"
    assert summary.energy_j == pytest.approx(3000.0)
    assert summary.j_per_token == pytest.approx(2.0)


def test_energy_is_scaled_from_the_span_to_the_duration() -> None:
    # Samples cover 8 s of a 10 s level: the average power stands for the whole level.
    samples = series(0, [250.0] * 9)
    summary = summarize_gpu(samples, output_tokens=100, duration_s=10.0)
    assert summary.energy_j == pytest.approx(2500.0)


def test_power_integration_when_there_is_no_counter() -> None:
    samples = series(0, [100.0, 200.0, 300.0], counter=False)  # trapezoids: mean 200 W
    summary = summarize_gpu(samples, output_tokens=400, duration_s=2.0)
    assert summary.energy_source == "power"
    assert summary.energy_j == pytest.approx(400.0)
    assert summary.j_per_token == pytest.approx(1.0)


def test_counter_and_power_agree_on_a_ramp() -> None:
    with_counter = series(0, [100.0, 180.0, 260.0, 200.0])
    without = series(0, [100.0, 180.0, 260.0, 200.0], counter=False)
    assert average_power_w(with_counter)[0] == pytest.approx(average_power_w(without)[0])


def test_a_counter_that_went_backwards_falls_back_to_power() -> None:
    samples = series(0, [300.0] * 3)
    samples[-1] = GpuSample(index=0, time_s=samples[-1].time_s, power_w=300.0, energy_mj=1.0)
    summary = summarize_gpu(samples, output_tokens=10, duration_s=2.0)
    assert summary.energy_source == "power"
    assert summary.energy_j == pytest.approx(600.0)


def test_single_power_reading_stands_for_the_level() -> None:
    samples = [GpuSample(index=0, time_s=1.0, power_w=150.0)]
    summary = summarize_gpu(samples, output_tokens=10, duration_s=4.0)
    assert summary.energy_j == pytest.approx(600.0)


def test_no_power_and_no_counter_gives_no_energy() -> None:
    samples = [GpuSample(index=0, time_s=t, util_pct=50.0) for t in (1.0, 2.0)]
    summary = summarize_gpu(samples, output_tokens=10, duration_s=1.0)
    assert summary.util_mean_pct == 50.0
    assert summary.energy_j is None and summary.j_per_token is None
    assert summary.energy_source is None


def test_zero_tokens_or_duration_give_no_per_token_figure() -> None:
    samples = series(0, [300.0] * 3)
    assert summarize_gpu(samples, output_tokens=0, duration_s=2.0).j_per_token is None
    zero = summarize_gpu(samples, output_tokens=10, duration_s=0.0)
    assert zero.energy_j is None and zero.j_per_token is None
    assert zero.power_mean_w == 300.0


def test_two_gpus_sum_energy_and_average_the_rest() -> None:
    samples = series(0, [300.0] * 5, util=90.0) + series(1, [100.0] * 5, util=50.0, counter=False)
    summary = summarize_gpu(samples, output_tokens=1000, duration_s=4.0)
    assert summary.gpus == 2
    assert summary.samples == 10
    assert summary.util_mean_pct == pytest.approx(70.0)
    assert summary.power_mean_w == pytest.approx(200.0)
    assert summary.power_total_mean_w == pytest.approx(400.0)
    assert summary.power_max_w == 300.0
    assert summary.energy_j == pytest.approx(1600.0)
    assert summary.energy_source == "mixed"
    assert summary.j_per_token == pytest.approx(1.6)
    assert summary.temperature_max_c == 64.0
    assert summary.memory_max_mib == 80_004.0
    assert summary.pcie_tx_mean_kbps == pytest.approx(150.0)
    assert [g.index for g in summary.per_gpu] == [0, 1]
    assert summary.per_gpu[1].energy_source == "power"


def test_throttling_reasons_are_collected() -> None:
    samples = series(0, [300.0] * 3) + series(1, [300.0] * 3, reasons=("sw_power_cap",))
    samples.append(GpuSample(index=1, time_s=2000.0, throttle_reasons=("hw_thermal",)))
    summary = summarize_gpu(samples, output_tokens=10, duration_s=1.0)
    assert summary.throttled is True
    assert summary.throttle_reasons == {"sw_power_cap", "hw_thermal"}
    assert summary.per_gpu[0].throttle_reasons == frozenset()
    assert summary.to_dict()["throttle_reasons"] == ["hw_thermal", "sw_power_cap"]


def test_a_calm_level_is_not_throttled() -> None:
    summary = summarize_gpu(series(0, [300.0] * 3), output_tokens=10, duration_s=1.0)
    assert summary.throttled is False


def test_busy_throttling_fake_gpus_end_to_end() -> None:
    gpus = [
        FakeGpu(util_pct=98.0, power_w=450.0),
        FakeGpu(util_pct=96.0, power_w=600.0, temperature_c=88.0, throttle_reasons=("hw_thermal",)),
    ]
    backend = FakeGpuBackend(gpus)
    samples = [backend.sample(i) for _ in range(5) for i in range(2)]
    summary = summarize_gpu(samples, output_tokens=1000, duration_s=1.0)
    assert summary.util_mean_pct == pytest.approx(97.0)
    assert summary.power_max_w == 600.0
    assert summary.temperature_max_c == 88.0
    assert summary.throttle_reasons == {"hw_thermal"}
    assert summary.energy_j is not None and summary.energy_j > 0
    json.dumps(summary.to_dict())


def test_fake_gpu_without_energy_counter_uses_power() -> None:
    backend = FakeGpuBackend([FakeGpu(power_w=200.0, energy_supported=False)])
    samples = [GpuSample(**{**backend.sample(0).__dict__, "time_s": float(t)}) for t in range(3)]
    summary = summarize_gpu(samples, output_tokens=100, duration_s=2.0)
    assert summary.energy_source == "power"
    assert summary.energy_j == pytest.approx(400.0)
