"""Secrets stay secret: the naming rule, redaction of argv/env/space text, URLs, file modes."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

import pytest
import yaml

from tests.fakes import FakeRunner
from tuner.check.host import check_storage
from tuner.check.report import Findings
from tuner.errors import ConfigError, StoreError
from tuner.launcher.identity import ProcessIdentity, identity_matches
from tuner.secrets import (
    REDACTED,
    looks_secret,
    redact_argv,
    redact_env,
    redact_space_text,
    safe_url,
    scrub,
    scrub_url,
    secret_values,
)
from tuner.space.settings import settings_from_params
from tuner.space.spec import load_space, parse_space
from tuner.storage import Store
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import run_sweep
from tuner.trial.runner import launch_spec_for
from tuner.views.best import best_report
from tuner.views.deploy import deployment_text, secret_args_notes

MARKER = "tuner-marker-SECRET-unit"


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "OPENAI_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "SECRET_KEY_BASE",
        "DB_PASSWORD",
        "PGPASSWORD",
        "--api-key",
        "--hf-token",
        "--hf-token=abc",
        "hfToken",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ],
)
def test_secret_names(name: str) -> None:
    assert looks_secret(name)


@pytest.mark.parametrize(
    "name",
    [
        "--max-num-batched-tokens",  # TOKEN inside a word that is no secret
        "--tokenizer",
        "--return-tokens-as-token-ids",
        "--max-tokens",
        "--ssl-keyfile",  # a path, not a key
        "NCCL_IB_PKEY",  # an InfiniBand partition number
        "NCCL_PROTO",
        "--port",
        "-O3",
    ],
)
def test_names_that_are_not_secrets(name: str) -> None:
    assert not looks_secret(name)


def test_argv_hides_secret_flag_values_and_keeps_switches_and_placeholders() -> None:
    argv = ["vllm", "--api-key", "k1", "--hf-token=k2", "--max-num-batched-tokens", "8192"]
    assert redact_argv(argv) == [
        "vllm",
        "--api-key",
        REDACTED,
        f"--hf-token={REDACTED}",
        "--max-num-batched-tokens",
        "8192",
    ]
    # A secret-looking switch followed by a flag hides nothing; a placeholder is no secret.
    assert redact_argv(["--api-key", "--port", "8"]) == ["--api-key", "--port", "8"]
    assert redact_argv(["--api-key", "{value}", "--hf-token={value}"]) == [
        "--api-key",
        "{value}",
        "--hf-token={value}",
    ]
    assert redact_env({"HF_TOKEN": "t0k3n", "NCCL_ALGO": "ring"}) == {
        "HF_TOKEN": REDACTED,
        "NCCL_ALGO": "ring",
    }


def test_scrub_hides_every_known_value_in_free_text() -> None:
    hide = secret_values(["srv", "--api-key", "sk-abcdef"], {"HF_TOKEN": "hf_xyz123", "A": "1"})
    assert hide == {"sk-abcdef", "hf_xyz123"}
    log = "non-default args: {'api_key': 'sk-abcdef'}\ntoken hf_xyz123 read; 1 worker"
    assert scrub(log, hide) == f"non-default args: {{'api_key': '{REDACTED}'}}\n" + (
        f"token {REDACTED} read; 1 worker"
    )


def _space_file(tmp_path: Path, **extra: object) -> Path:
    space = {
        "study": "s",
        "server": {
            "command": ["srv", "--port", "{port}", "--api-key", MARKER + "-flag"],
            "env": {"HF_TOKEN": MARKER + "-env", "NCCL_DEBUG": "WARN"},
        },
        "params": {
            "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL"]},
            "token": {"env": "OPENAI_API_KEY", "choices": ["default", MARKER + "-param"]},
            "keys": {"args": ["--hf-token", "{value}"], "choices": [MARKER + "-a", MARKER + "-b"]},
            "auth": {"args": ["--api-key=" + MARKER + "-switch"], "choices": ["default", True]},
        },
        **extra,
    }
    path = tmp_path / "s.yaml"
    path.write_text("# my space\n" + yaml.safe_dump(space, sort_keys=False))
    return path


def test_the_stored_space_has_no_secret_and_reads_back_as_the_sweep_ran_it(
    tmp_path: Path,
) -> None:
    path = _space_file(tmp_path)
    stored = redact_space_text(path.read_text())
    assert MARKER not in stored
    data = yaml.safe_load(stored)
    assert data["server"]["env"] == {"HF_TOKEN": REDACTED, "NCCL_DEBUG": "WARN"}
    assert data["server"]["command"][-2:] == ["--api-key", REDACTED]
    assert data["params"]["token"]["choices"] == ["default", REDACTED]
    assert data["params"]["keys"]["choices"] == [f"{REDACTED}1", f"{REDACTED}2"]
    assert data["params"]["keys"]["args"] == ["--hf-token", "{value}"]
    # What tuner reasons with (the loaded spec) and what it stores are the same space.
    loaded = load_space(path)
    reread = parse_space(data, path)
    assert reread.spec.params == loaded.spec.params
    assert reread.secret_spec is None


def test_a_space_without_secrets_is_stored_verbatim(tmp_path: Path) -> None:
    text = "# comment kept\nserver:\n  command: [srv, --port, '{port}']\n  env: {A: 1}\n"
    assert redact_space_text(text) == text


def test_only_the_launch_gets_the_secret_param_values(tmp_path: Path) -> None:
    space = load_space(_space_file(tmp_path))
    params = {"token": REDACTED, "keys": f"{REDACTED}2", "auth": True}
    settings = settings_from_params(space.spec, params)
    assert settings.env["OPENAI_API_KEY"] == REDACTED
    assert MARKER not in " ".join(settings.args)
    launch = launch_spec_for(space, settings, port=8000, trial_dir=tmp_path / "t")
    assert launch.env["OPENAI_API_KEY"] == MARKER + "-param"
    assert launch.env["HF_TOKEN"] == MARKER + "-env"
    assert launch.argv[-5:] == [
        "--api-key",
        MARKER + "-flag",
        "--hf-token",
        MARKER + "-b",
        "--api-key=" + MARKER + "-switch",
    ]


def test_a_secret_param_must_list_its_values(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "server": {"command": ["srv", "--port", "{port}"]},
                "params": {"k": {"args": ["--api-key", "{value}"], "int": [1, 9]}},
            }
        )
    )
    with pytest.raises(ConfigError, match=r"r\.yaml: params\.k: --api-key \{value\} looks like"):
        load_space(path)


def test_a_sweep_over_a_secret_param_stores_only_its_tag(tmp_path: Path) -> None:
    path = _space_file(tmp_path, stop={"baseline_launches": 1, "patience": 3})
    storage = f"sqlite:///{tmp_path}/s.db"

    def speed(params: dict[str, object]) -> float:
        return 120.0 if params["token"] == REDACTED else 100.0

    runner = FakeRunner(Store(storage), "s", speed=speed, seed=1)
    run_sweep(load_space(path), RunRequest(storage, 8, seed=1), Seams(runner=runner))
    for db in tmp_path.glob("s.db*"):
        assert MARKER.encode() not in db.read_bytes(), db
    answer = best_report(storage, "s")
    assert answer.recommended is not None
    assert answer.recommended.params["token"] == REDACTED
    env_text = deployment_text(answer.recommended, "env")
    assert f"OPENAI_API_KEY='{REDACTED}'" in env_text
    assert "# OPENAI_API_KEY: secret, not kept by tuner" in env_text
    assert MARKER not in deployment_text(answer.recommended, "systemd")


def test_args_export_notes_name_the_secret_flags(tmp_path: Path) -> None:
    from tuner.views.best import ConfigEntry

    entry = ConfigEntry(
        trial=3,
        trials=(3,),
        config="c",
        params={},
        env={},
        args=("--hf-token", f"{REDACTED}1", f"--api-key={REDACTED}", "-O3"),
        value=1.0,
        stderr=0.0,
        interval=None,
        launches=1,
    )
    assert deployment_text(entry, "args") == "--hf-token '***1' '--api-key=***' -O3"
    assert [n.split(":")[0] for n in secret_args_notes(entry)] == ["--hf-token", "--api-key"]


def test_a_url_is_shown_with_its_password_hidden() -> None:
    url = "postgresql+psycopg://u:hunter2@127.0.0.1/test"
    assert safe_url(url) == "postgresql+psycopg://u:***@127.0.0.1/test"
    assert safe_url("sqlite:///experiments.db") == "sqlite:///experiments.db"
    assert "hunter2" not in scrub_url(f"cannot connect to {url} (password hunter2)", url)
    assert safe_url("not a url://u:pw1234@h") == "not a url://u:***@h"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_storage_never_shows_its_password() -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql+psycopg://u:hunter2@127.0.0.1:{_closed_port()}/test"
    with pytest.raises(StoreError) as caught:
        Store(url)
    assert "hunter2" not in str(caught.value)
    assert "u:***@127.0.0.1" in str(caught.value)
    found = Findings()
    check_storage(url, found)
    assert [i.level for i in found.items] == ["error"]
    assert "hunter2" not in found.items[0].message and "***" in found.items[0].message


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_sqlite_database_is_owner_only(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path}/new.db")
    store.ensure_study("s", space_path=None, space_text="x: 1")
    files = sorted(tmp_path.glob("new.db*"))
    assert tmp_path / "new.db" in files
    for path in files:  # the -wal and -shm files take the database file's mode
        assert _mode(path) == 0o600, path


def test_an_existing_database_keeps_its_mode_and_check_says_so(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    path.touch(mode=0o644)
    path.chmod(0o644)
    found = Findings()
    check_storage(f"sqlite:///{path}", found)
    assert _mode(path) == 0o644
    warning = [i for i in found.items if i.level == "warning"]
    assert warning and f"chmod 600 {path}" in warning[0].message


def test_a_stored_redacted_command_line_still_identifies_the_server() -> None:
    live = ("vllm", "serve", "m", "--api-key", "sk-live")
    stored = ProcessIdentity(
        pid=1,
        pgid=1,
        create_time=10.0,
        cmdline=tuple(redact_argv(live)),
        hostname="h",
    )
    assert identity_matches(stored, create_time=10.0, cmdline=live)
    assert not identity_matches(stored, create_time=10.0, cmdline=("vllm", "serve", "other"))
