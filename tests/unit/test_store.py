"""The store: rows in, rows out, secrets redacted, crash-recovery facts kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.storage import REDACTED, Store, redact_argv, redact_env


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path}/t.db")


def _launch(store: Store, **extra: object) -> int:
    fields = dict(
        study="s",
        trial_id=1,
        trial_number=0,
        role="baseline",
        config_hash="abc",
        params={"A": "default"},
        env={"NCCL_PROTO": "LL"},
        argv=["srv", "--port", "1"],
    )
    fields.update(extra)
    return store.add_launch(**fields)


def test_secret_looking_env_and_flags_are_redacted() -> None:
    assert redact_env({"HF_TOKEN": "x", "OPENAI_API_KEY": "y", "NCCL_ALGO": "ring"}) == {
        "HF_TOKEN": REDACTED,
        "OPENAI_API_KEY": REDACTED,
        "NCCL_ALGO": "ring",
    }
    assert redact_argv(["vllm", "--api-key", "s3cret", "--hf-token=abc", "--port", "8"]) == [
        "vllm",
        "--api-key",
        REDACTED,
        f"--hf-token={REDACTED}",
        "--port",
        "8",
    ]


def test_launch_row_is_stored_redacted(store: Store) -> None:
    launch_id = _launch(store, env={"HF_TOKEN": "t", "A": "1"}, argv=["v", "--api-key", "k"])
    row = store.launches("s")[0]
    assert row.id == launch_id and row.status == "running"
    assert row.env == {"HF_TOKEN": REDACTED, "A": "1"}
    assert row.argv == ["v", "--api-key", REDACTED]


def test_running_launches_keep_what_recovery_needs(store: Store) -> None:
    _launch(store, pid=123, pgid=123, create_time=1.5, cmdline=["srv"], marker="m1")
    done = _launch(store, trial_number=1)
    store.update_launch(done, status="complete")
    [record] = store.running_servers("s")
    assert (record.pid, record.pgid, record.create_time, record.marker) == (123, 123, 1.5, "m1")
    assert record.cmdline == ("srv",)


def test_levels_keep_every_request(store: Store) -> None:
    launch_id = _launch(store)
    summary = {
        "concurrency": 4,
        "completed": 2,
        "errors": 1,
        "duration_s": 2.0,
        "output_throughput": 10.0,
        "ttft_ms": {"p50": 5.0},
    }
    requests = [
        dict(
            idx=i,
            start_s=0.1 * i,
            ttft_s=0.01,
            e2el_s=1.0,
            itl_s=[0.1, 0.2],
            prompt_tokens=16,
            output_tokens=10,
            error=None if i < 2 else "HTTP 500",
        )
        for i in range(3)
    ]
    level_id = store.add_level(
        launch_id,
        round_index=1,
        summary=summary,
        requests=requests,
        flagged="level had 1 preemptions",
    )
    [level] = store.levels(launch_id)
    assert (level.id, level.round, level.concurrency, level.errors) == (level_id, 1, 4, 1)
    assert level.summary["ttft_ms"] == {"p50": 5.0}
    rows = store.requests(level_id)
    assert [r.error for r in rows] == [None, None, "HTTP 500"]
    assert rows[0].itl_s == [0.1, 0.2]


def test_study_row_is_created_once_and_updated(store: Store) -> None:
    store.ensure_study("s", space_path="a.yaml", space_text="x: 1")
    store.ensure_study("s", space_path="a.yaml", space_text="x: 2")
    store.update_study("s", stop_reason="plateau", noise={"rel_sd": 0.01})
    row = store.study("s")
    assert row is not None
    assert (row.space_text, row.stop_reason, row.noise) == ("x: 2", "plateau", {"rel_sd": 0.01})
    store.check_writable()


def test_samples_round_trip(store: Store) -> None:
    launch_id = _launch(store)
    store.add_samples(
        launch_id,
        [
            dict(kind="gpu", time_s=1.0, gpu_index=0, data={"power_w": 300.0}),
            dict(kind="host", time_s=1.0, gpu_index=None, data={"host_cpu_pct": 50.0}),
        ],
    )
    assert [s.data for s in store.samples(launch_id, "gpu")] == [{"power_w": 300.0}]
