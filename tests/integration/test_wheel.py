"""The built wheel works installed: its shipped spaces come with it, not from a checkout.

The wheel is built from a copy of the checkout (so the test leaves no build/ behind),
installed with ``--no-deps`` into a fresh venv, and run from a folder outside the checkout.
The fresh venv borrows the dependencies from the project's venv through a ``.pth`` line
after its own site-packages: tuner itself can only come from the wheel.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "tuner", "search_spaces")


def _run(
    argv: list[str | Path], cwd: Path, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel of this checkout installed; its bin/ folder."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            # symlinks=True: tuner/search_spaces stays the link it is in the checkout.
            shutil.copytree(
                ROOT / name,
                source / name,
                symlinks=True,
                ignore=shutil.ignore_patterns("__pycache__"),
            )
        else:
            shutil.copy2(ROOT / name, source / name)
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", base / "dist", source],
        cwd=base,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = (base / "dist").glob("launch_tuner-*.whl")

    fresh = base / "fresh"
    venv.EnvBuilder(with_pip=True).create(fresh)
    python = fresh / "bin" / "python"
    done = _run([python, "-m", "pip", "install", "-q", "--no-deps", wheel], cwd=base)
    assert done.returncode == 0, done.stderr
    purelib = _run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=base
    ).stdout.strip()
    # A plain path line: appended after the fresh site-packages, and the project venv's
    # own .pth files (its editable tuner) are not run.
    Path(purelib, "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return fresh / "bin"


def test_the_installed_tuner_is_the_wheel(installed: Path, tmp_path: Path) -> None:
    found = _run(
        [
            installed / "python",
            "-c",
            "import tuner, tuner.space.spec as s; print(tuner.__file__); print(s.SHIPPED_SPACES)",
        ],
        cwd=tmp_path,
    )
    assert found.returncode == 0, found.stderr
    module, shipped = found.stdout.split()
    assert Path(module).is_relative_to(installed.parent), module
    assert Path(shipped).is_relative_to(installed.parent), shipped
    assert sorted(p.name for p in Path(shipped).glob("*.yaml")) == sorted(
        p.name for p in (ROOT / "search_spaces").glob("*.yaml")
    )
    # sim.yaml's probe.config_json: the ceiling's model shape ships with it.
    assert (Path(shipped) / "models" / "kimi-k2.5-int4" / "config.json").is_file()


def test_check_finds_a_shipped_space_by_name(installed: Path, tmp_path: Path) -> None:
    checked = _run([installed / "tuner", "check", "--space", "nccl.yaml"], cwd=tmp_path)
    out = checked.stdout + checked.stderr
    assert "no such space file" not in out
    # It found and validated the file in the installed package; vLLM may be missing here.
    assert f"{installed.parent}" in out and "search_spaces/nccl.yaml:" in out, out
    assert checked.returncode in (0, 2), out


def test_an_unknown_space_lists_the_shipped_ones(installed: Path, tmp_path: Path) -> None:
    checked = _run([installed / "tuner", "check", "--space", "nope"], cwd=tmp_path)
    assert checked.returncode == 2
    names = ", ".join(sorted(p.name for p in (ROOT / "search_spaces").glob("*.yaml")))
    assert f"shipped spaces are: {names}" in " ".join((checked.stdout + checked.stderr).split())


def test_the_wheel_is_launch_tuner_and_says_its_version(installed: Path, tmp_path: Path) -> None:
    # The distribution's name is launch-tuner (README, "Install"); the command stays tuner.
    shown = _run([installed / "tuner", "--version"], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    first, *others = shown.stdout.splitlines()
    version = re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert version is not None and first == f"tuner {version[1]}", shown.stdout
    assert [line.split()[0] for line in others] == ["vLLM", "torch", "NCCL", "driver"]
    listed = _run([installed / "python", "-m", "pip", "show", "launch-tuner"], cwd=tmp_path)
    assert listed.returncode == 0 and "Name: launch-tuner" in listed.stdout, listed.stderr
