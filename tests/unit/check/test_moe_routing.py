"""tuner.check.moe_routing: screening launches of a MoE model on a vLLM that knows it add
VLLM_MOE_ROUTING_SIMULATION_STRATEGY=uniform_random; the user's own choice wins; full
launches never get it. The vLLM package is a real folder on sys.path or on a child
interpreter's PYTHONPATH (tuner.check.vllm_package), the model a real config.json."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.check.helpers import VLLM_HELP, FakeHelp, run_check
from tuner.check.moe_routing import decided_moe_routing, moe_routing
from tuner.check.vllm_package import server_interpreter, vllm_package_dir
from tuner.errors import ConfigError
from tuner.space.settings import baseline_params, settings_from_params
from tuner.space.spec import SHIPPED_SPACES, Space, load_space
from tuner.trial.launch_spec import launch_spec_for

VAR = "VLLM_MOE_ROUTING_SIMULATION_STRATEGY"
KIMI_CONFIG = SHIPPED_SPACES / "models" / "kimi-k2.5-int4" / "config.json"
DENSE_CONFIG = {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 32}
ENVS_WITH = f'environment_variables = {{\n    "{VAR}": lambda: "",\n}}\n'
ENVS_WITHOUT = 'environment_variables = {\n    "VLLM_HOST_IP": lambda: "",\n}\n'
DUMMY = {"args": ["--load-format", "dummy"]}


def vllm_package(root: Path, envs: str) -> Path:
    """A vllm package folder under ``root`` whose envs.py is ``envs``."""
    package = root / "vllm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "envs.py").write_text(envs)
    return package


def model_dir(tmp_path: Path, name: str = "Kimi-K2.5", config: Any = None) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    if config is None:
        shutil.copy(KIMI_CONFIG, folder / "config.json")
    else:
        (folder / "config.json").write_text(json.dumps(config))
    return folder


def space(tmp_path: Path, command: list[str], **sections: Any) -> Space:
    raw: dict[str, Any] = {"server": {"command": command}, "screening": dict(DUMMY)}
    for key, value in sections.items():
        if key == "server_env":
            raw["server"]["env"] = value
        elif key == "screening":
            raw["screening"] = {**raw["screening"], **value}
        else:
            raw[key] = value
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_space(path)


def vllm_command(model: Path) -> list[str]:
    """vLLM run as a module of tuner's interpreter (``{python}``), as the CPU build is."""
    server = ["{python}", "-m", "vllm.entrypoints.openai.api_server", "--port", "{port}"]
    return [*server, "--model", str(model)]


@pytest.fixture
def knows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tuner's interpreter finds a vllm whose envs.py knows the variable."""
    root = tmp_path / "site"
    vllm_package(root, ENVS_WITH)
    monkeypatch.syspath_prepend(str(root))
    return root


def test_a_moe_model_on_a_vllm_that_knows_it_gets_uniform_random(
    tmp_path: Path, knows: Path
) -> None:
    found = moe_routing(space(tmp_path, vllm_command(model_dir(tmp_path))))
    assert found.on and found.env() == {VAR: "uniform_random"}
    assert found.sentence() == (
        f"screening launches add {VAR}=uniform_random: Kimi-K2.5 has 384 experts and this "
        "vLLM knows the variable; screening.moe_routing: off turns it off"
    )


def test_a_dense_model_gets_nothing(tmp_path: Path, knows: Path) -> None:
    model = model_dir(tmp_path, "Llama", DENSE_CONFIG)
    found = moe_routing(space(tmp_path, vllm_command(model)))
    assert not found.on and found.env() == {}
    assert found.reason == "Llama has no routed experts (config.json)"


def test_a_vllm_whose_envs_py_lacks_the_variable_gets_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "old-site"
    package = vllm_package(root, ENVS_WITHOUT)
    monkeypatch.syspath_prepend(str(root))
    found = moe_routing(space(tmp_path, vllm_command(model_dir(tmp_path))))
    assert not found.on
    assert found.reason.startswith(
        f"Kimi-K2.5 has 384 experts, but the vLLM in {package} does not know the variable"
    )


def test_no_vllm_found_or_no_config_json_leaves_it_out_and_says_how_to_force_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not (Path(p) / "vllm").is_dir()])
    unknown = moe_routing(space(tmp_path, vllm_command(model_dir(tmp_path))))
    assert not unknown.on
    assert "the server's vLLM package was not found from its command" in unknown.reason
    assert unknown.reason.endswith("screening.moe_routing: uniform_random adds it anyway")
    absent = moe_routing(space(tmp_path / "x", vllm_command(tmp_path / "nowhere")))
    assert not absent.on and "config.json is not on this machine" in absent.reason


def test_the_users_own_setting_wins(tmp_path: Path, knows: Path) -> None:
    command = vllm_command(model_dir(tmp_path))
    own = space(tmp_path / "a", command, screening={"env": {VAR: "normal_routing"}})
    assert moe_routing(own).reason == "screening.env sets it ('normal_routing')"
    # ... and that value is what a screening launch gets.
    assert launch(own, screening=True).env[VAR] == "normal_routing"
    param = {"routing": {"env": VAR, "choices": ["default", "uniform_random"]}}
    by_param = moe_routing(space(tmp_path / "b", command, params=param))
    assert (by_param.on, by_param.reason) == (False, "params.routing sets it")
    fixed = moe_routing(space(tmp_path / "c", command, server_env={VAR: "uniform_random"}))
    assert (fixed.on, fixed.reason) == (False, "server.env sets it, for every launch")
    off = moe_routing(space(tmp_path / "d", command, screening={"moe_routing": "off"}))
    assert (off.on, off.reason) == (False, "screening.moe_routing: off")


def test_uniform_random_forces_it_where_auto_would_not(tmp_path: Path) -> None:
    script = ["/bin/server", "--port", "{port}"]  # not vLLM: auto leaves it out
    assert not moe_routing(space(tmp_path / "a", script)).on
    forced = moe_routing(space(tmp_path / "b", script, screening={"moe_routing": "uniform_random"}))
    assert forced.on and forced.reason.startswith("screening.moe_routing: uniform_random")


def test_uniform_random_beside_the_variable_in_screening_env_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"moe_routing: uniform_random and env\." + VAR):
        space(
            tmp_path,
            ["/bin/server"],
            screening={"moe_routing": "uniform_random", "env": {VAR: "x"}},
        )


def test_the_simulator_with_the_kimi_config_of_probe_config_json(tmp_path: Path) -> None:
    sim = ["{python}", "-m", "tuner.sim", "--port", "{port}"]
    probe = {"command": ["{python}", "-m", "tuner.sim.probe"], "config_json": str(KIMI_CONFIG)}
    found = moe_routing(space(tmp_path, sim, probe=probe))
    assert found.on
    assert found.reason.startswith("kimi-k2.5-int4 has 384 experts and the simulator reads it")


def launch(space: Space, *, screening: bool) -> Any:
    settings = settings_from_params(space.spec, baseline_params(space.spec))
    return launch_spec_for(
        space, settings, port=8000, trial_dir=space.path.parent / "t", screening=screening
    )


def test_screening_launches_get_it_full_ones_never_and_it_is_decided_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "site"
    package = vllm_package(root, ENVS_WITH)
    monkeypatch.syspath_prepend(str(root))
    moe = space(tmp_path, vllm_command(model_dir(tmp_path)))
    screen = launch(moe, screening=True)
    assert screen.env[VAR] == "uniform_random" and VAR not in screen.unset
    assert VAR not in launch(moe, screening=False).env
    # Decided once for the run: a vLLM upgraded under a running study changes nothing.
    (package / "envs.py").write_text(ENVS_WITHOUT)
    assert moe_routing(moe).on is False
    assert decided_moe_routing(moe).on and launch(moe, screening=True).env[VAR] == "uniform_random"


def test_a_vllm_script_is_read_through_its_shebang_in_a_child_interpreter(
    tmp_path: Path,
) -> None:
    """A ``vllm`` console script whose ``#!`` names another Python (a venv's): that
    interpreter is asked, with the server's PYTHONPATH, where its vllm lies."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.symlink_to(sys.executable)
    script = bin_dir / "vllm"
    script.write_text(f"#!{python}\nfrom vllm.entrypoints.cli.main import main\n")
    script.chmod(0o755)
    site = tmp_path / "venv-site"
    package = vllm_package(site, ENVS_WITH)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(site)}
    argv = ["vllm", "serve", "moonshotai/Kimi-K2.5"]
    assert server_interpreter(argv, env) == str(python)
    assert vllm_package_dir(argv, env) == package
    assert vllm_package_dir(argv, {**env, "PYTHONPATH": str(tmp_path / "empty")}) is None
    assert server_interpreter(["/bin/sh", "-c", "true"], env) is None


def test_tuner_check_says_it_in_one_line(tmp_path: Path) -> None:
    sim = ["{python}", "-m", "tuner.sim", "--host", "127.0.0.1", "--port", "{port}"]
    probe = {"command": ["{python}", "-m", "tuner.sim.probe"], "config_json": str(KIMI_CONFIG)}
    help_text = VLLM_HELP + "  --load-format {auto,dummy}\n"
    for name in ("on", "off"):
        (tmp_path / name).mkdir()
    on = run_check(tmp_path / "on", FakeHelp(help_text), command=sim, probe=probe, screening=DUMMY)
    assert (
        f"ok    screening.moe_routing: screening launches add {VAR}=uniform_random: "
        "kimi-k2.5-int4 has 384 experts and the simulator reads it as vLLM 0.32 does; "
        "screening.moe_routing: off turns it off"
    ) in on.lines()
    off = run_check(
        tmp_path / "off",
        FakeHelp(help_text),
        command=sim,
        probe=probe,
        screening={**DUMMY, "moe_routing": "off"},
    )
    assert (
        f"ok    screening.moe_routing: screening launches leave {VAR} out: "
        "screening.moe_routing: off"
    ) in off.lines()
