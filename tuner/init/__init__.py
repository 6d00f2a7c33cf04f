"""`tuner init`: a commented space file for a server command on this host, then its check.

``init_space(argv, ...)`` reads the host for the command (``survey``: layout, GPUs'
topology, the server's --help, the model's config.json and weights), picks the params that
can act there (``params``), the goal's benchmark and objective (``goals``), the probe,
screening and startup limit (``sections``), writes the file (``render``), loads it as
`tuner run` would and runs `tuner check`'s checks on it. The file is written even when the
check finds errors: it is a draft to fix, and the check's lines say what. An existing file
is never overwritten without ``force``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tuner.check import CheckReport, HelpReader, check_space
from tuner.errors import ConfigError
from tuner.init.command import base_name
from tuner.init.goals import DEFAULT_GOAL, GOALS
from tuner.init.params import choose_params
from tuner.init.render import render_space
from tuner.init.survey import survey
from tuner.space.spec import load_space
from tuner.telemetry.topology import TopologyRead, read_topology

__all__ = ["DEFAULT_GOAL", "GOALS", "InitResult", "default_out", "init_space"]

SUGGESTED_TRIALS = 20


@dataclass(frozen=True)
class InitResult:
    """The file written, what had to be assumed, and its check."""

    path: Path
    notes: tuple[str, ...]
    report: CheckReport
    trials: int = SUGGESTED_TRIALS

    @property
    def next_command(self) -> str:
        return f"tuner run --space {self.path} --trials {self.trials}"


def default_out(argv: Sequence[str]) -> Path:
    """``<model-name>.yaml`` in the working directory."""
    return Path(f"{base_name(argv)}.yaml")


def init_space(
    argv: Sequence[str],
    *,
    storage: str,
    goal: str = DEFAULT_GOAL,
    out: Path | None = None,
    force: bool = False,
    gpus: TopologyRead | None = None,
    read_help: HelpReader | None = None,
    help_cache_dir: Path | None = None,
) -> InitResult:
    """Write the space file for ``argv`` and check it; ConfigError before anything is
    written for no command, an unknown goal, or an existing file without ``force``.

    ``gpus`` (the topology) and ``read_help`` stand in for NVML and the server in tests."""
    if not argv:
        raise ConfigError(
            "give the server command after --: tuner init -- vllm serve MODEL "
            "--tensor-parallel-size 8"
        )
    if goal not in GOALS:
        raise ConfigError(f"--goal {goal!r}: use one of {', '.join(GOALS)}")
    path = out if out is not None else default_out(argv)
    if path.exists() and not force:
        raise ConfigError(
            f"{path} exists: pass --force to overwrite it, or --out ANOTHER.yaml to write beside it"
        )
    topology = gpus if gpus is not None else read_topology()
    found = survey(argv, path, gpus=topology, read_help=read_help, help_cache_dir=help_cache_dir)
    chosen = GOALS[goal]
    text = render_space(
        found, chosen, base_name(argv), choose_params(found, chosen), SUGGESTED_TRIALS
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    space = load_space(path)
    report = check_space(
        space,
        storage=storage,
        help_cache_dir=help_cache_dir,
        read_help=read_help,
        topology=topology,
    )
    return InitResult(path=path, notes=found.notes, report=report)
