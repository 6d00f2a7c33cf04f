"""suggest() (tuner/study/suggest.py) and Settings (tuner/space/settings.py).

Params become env and argv, 'default' means unset, constraints hold.
"""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from tuner.space.settings import (
    baseline_params,
    changed_from_defaults,
    server_argv,
    server_env,
    settings_from_params,
    violated_constraints,
)
from tuner.space.spec import parse_space
from tuner.study.attrs import PARAMS as PARAMS_ATTR
from tuner.study.suggest import optuna_params, suggest

SPACE = parse_space(
    {
        "server": {
            "command": ["{python}", "-m", "srv", "--port", "{port}"],
            "env": {"VLLM_CACHE_ROOT": "{study_dir}/cache/{config}"},
        },
        "params": {
            "NCCL_ALGO": {"env": "NCCL_ALGO", "choices": ["default", "allreduce:ring"]},
            "MIN": {"env": "NCCL_MIN_NCHANNELS", "choices": ["default", 4, 16]},
            "MAX": {"env": "NCCL_MAX_NCHANNELS", "choices": ["default", 8, 32]},
            "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
            "eager": {"args": ["--enforce-eager"], "choices": ["default", True]},
            "seqs": {"args": ["--max-num-seqs", "{value}"], "int": [16, 512], "log": True},
        },
        "constraints": ["MIN <= MAX"],
    },
    Path("s.yaml"),
).spec


def test_fixed_trial_becomes_env_and_args_in_file_order() -> None:
    trial = optuna.trial.FixedTrial(
        {
            "NCCL_ALGO": "allreduce:ring",
            "MIN": 4,
            "MAX": "default",
            "compilation": 0,
            "eager": True,
            "seqs": 64,
        }
    )
    s = suggest(trial, SPACE)
    assert s.env == {"NCCL_ALGO": "allreduce:ring", "NCCL_MIN_NCHANNELS": "4"}
    assert s.unset == {"NCCL_MAX_NCHANNELS"}
    assert s.args == ("-O0", "--enforce-eager", "--max-num-seqs", "64")
    assert s.changed == {
        "NCCL_ALGO": "allreduce:ring",
        "MIN": 4,
        "compilation": 0,
        "eager": True,
        "seqs": 64,
    }


def test_default_everywhere_sets_nothing_and_unsets_every_env_param() -> None:
    s = settings_from_params(SPACE, baseline_params(SPACE))
    assert s.env == {} and s.args == ()
    assert s.unset == {"NCCL_ALGO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"}
    assert s.changed == {}


def test_changed_from_defaults_keeps_order_and_drops_only_the_word_default() -> None:
    params = {"b": "default", "a": 0, "c": False, "d": "Default", "e": "x"}
    assert list(changed_from_defaults(params).items()) == [
        ("a", 0),
        ("c", False),
        ("d", "Default"),
        ("e", "x"),
    ]


def test_enqueued_baseline_keeps_range_params_at_default() -> None:
    params = baseline_params(SPACE)
    trial = optuna.trial.FixedTrial(optuna_params(SPACE, params))
    trial.set_user_attr(PARAMS_ATTR, params)
    s = suggest(trial, SPACE)
    assert s.params["seqs"] == "default" and "--max-num-seqs" not in s.args


def test_config_hash_is_stable_and_ignores_spelling_of_numbers() -> None:
    a = settings_from_params(SPACE, {"MIN": 4, "compilation": 3})
    b = settings_from_params(SPACE, {"compilation": "3", "MIN": 4.0, "MAX": "default"})
    c = settings_from_params(SPACE, {"MIN": 16})
    assert a.config_hash == b.config_hash != c.config_hash


def test_constraints_skip_sides_left_at_default() -> None:
    assert [str(c) for c in violated_constraints(SPACE, {"MIN": 16, "MAX": 8})] == ["MIN <= MAX"]
    assert violated_constraints(SPACE, {"MIN": 4, "MAX": 8}) == []
    assert violated_constraints(SPACE, {"MIN": 16, "MAX": "default"}) == []
    # A param left out is at its default, not the literal text of its name.
    assert violated_constraints(SPACE, {"MIN": 16}) == []
    assert violated_constraints(SPACE, {"MAX": 4}) == []


def test_placeholders_in_argv_and_env_only_the_documented_ones() -> None:
    s = settings_from_params(SPACE, {"compilation": 3})
    argv = server_argv(SPACE.server, s, port=8123, study_dir="/runs/x")
    assert argv[3:] == ["--port", "8123", "-O3"]
    assert argv[0].endswith("python") or "python" in argv[0]
    env = server_env(SPACE.server, s, port=8123, study_dir="/runs/x")
    assert env == {"VLLM_CACHE_ROOT": f"/runs/x/cache/{s.config_hash}"}


def test_sampling_with_optuna_covers_choices_and_ranges() -> None:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    seen = set()
    for _ in range(30):
        trial = study.ask()
        s = suggest(trial, SPACE)
        assert 16 <= int(s.params["seqs"]) <= 512
        seen.add(s.params["compilation"])
        study.tell(trial, 1.0)
    assert seen == {"default", 0, 3}


@pytest.mark.parametrize("value,present", [(True, True), ("true", True), ("default", False)])
def test_flag_params(value: object, present: bool) -> None:
    s = settings_from_params(SPACE, {"eager": value})
    assert ("--enforce-eager" in s.args) is present
