"""Deployment text of a configuration, in the form the place that starts the server reads.

What `tuner best --format env | systemd | args | docker | vllm-config` prints:

- env: an EnvironmentFile that systemd and a shell (``set -a; . FILE``) read alike;
- systemd: a drop-in: ``Environment=`` lines and ``ExecStart=`` (the space's server
  command, placeholders filled, with the settings appended);
- args: the flags to append to the server's command line (one shell line);
- docker: the ``-e NAME=VALUE`` flags of ``docker run`` (one shell line);
- vllm-config: a YAML file for ``vllm serve MODEL --config FILE`` (tuner/views/vllm_config.py).

Every value is quoted for its format (tuner/views/quoting.py). A secret param's value is
not stored: it prints as ``***`` (tuner/secrets.py), with a comment (env, systemd,
vllm-config) or a note on stderr (args, docker: their output stays one command line) to
set it. ``Deployment`` is the same content as data: the ``deploy`` key of
``tuner best --format json``.

When the answer is to keep the defaults (no gain) or is not settled, the configuration
deployed is the defaults (no settings), and each format says why: a first comment line
``# tuner: keep the defaults (no gain): ...`` or ``# tuner: not settled: deploy the
defaults until ...; resume with ...`` (env, systemd, vllm-config); args and docker print
the defaults' empty line and say it on stderr (tuner/views/best_verdict.py, docs/deploy.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tuner.secrets import is_redacted
from tuner.views import quoting
from tuner.views.vllm_config import vllm_config_text, vllm_options

if TYPE_CHECKING:  # the type only: best.py imports the study and its analysis
    from tuner.views.best import ConfigEntry

DEPLOY_FORMATS = ("env", "systemd", "args", "docker", "vllm-config")
WHICH = ("recommended", "best")
"""Which configuration to deploy: the recommended one (the simplest as good as the
best, the default) or the best measured."""
LINE_FORMATS = ("args", "docker")
"""Formats printed as one shell line: their notes go to stderr, not into the line."""


@dataclass(frozen=True)
class Deployment:
    """What to deploy, as data: the settings and the full command the systemd drop-in runs."""

    which: str
    trial: int | None
    env: dict[str, str]
    args: list[str]
    command: list[str]
    """The space's server command (placeholders filled) with ``args`` appended."""
    command_note: str | None
    vllm_config: dict[str, Any]
    secrets: list[str]
    """One sentence per secret value (shown as ***) to fill in."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def deployment(entry: ConfigEntry, which: str = "recommended") -> Deployment:
    """``entry`` as a Deployment (JSON holds any value: nothing is refused here)."""
    return Deployment(
        which=which,
        trial=entry.trial,
        env=dict(entry.env),
        args=list(entry.args),
        command=list(entry.command),
        command_note=entry.command_note,
        vllm_config=vllm_options(entry.args)[0],
        secrets=secret_notes(entry),
    )


def deployment_text(
    entry: ConfigEntry, fmt: str, which: str = "recommended", notice: Sequence[str] = ()
) -> str:
    """The settings of ``entry`` in the form ``fmt`` (one of DEPLOY_FORMATS) to paste.

    ``notice``: what the answer is when it is not a confirmed change (keep the defaults,
    not settled: views/best_verdict.deploy_notice), one comment line each first in the
    formats with comments (env, systemd, vllm-config); args and docker, one shell line,
    leave it to stderr.
    """
    quoting.check_deployable(entry.env, [*entry.command, *entry.args])
    title = f"tuner: trial {entry.trial} ({which})"
    notice = [" ".join(line.splitlines()) for line in notice]  # each stays one comment
    said = [f"# {line}" for line in notice]
    if fmt == "env":
        lines = [
            *said,
            f"# {title}: an EnvironmentFile= for systemd, or `set -a; . FILE` in a shell",
        ]
        for k, v in entry.env.items():
            lines += _secret_comment(k, v) + [quoting.env_file_line(k, v)]
        return "\n".join(lines)
    if fmt == "systemd":
        return "\n".join([*said, _systemd_text(entry, title)])
    if fmt == "docker":
        words = [w for k, v in entry.env.items() for w in ("-e", f"{k}={v}")]
        return " ".join(quoting.shell_word(w) for w in words)
    if fmt == "vllm-config":
        return vllm_config_text(entry.args, entry.env, header=[*notice, title])
    return " ".join(quoting.shell_word(a) for a in entry.args)


def _systemd_text(entry: ConfigEntry, title: str) -> str:
    lines = [
        f"# {title}: a drop-in, e.g. /etc/systemd/system/vllm.service.d/tuner.conf",
        "[Service]",
    ]
    for k, v in entry.env.items():
        lines += _secret_comment(k, v) + [quoting.systemd_environment(k, v)]
    lines += [f"# {note}" for note in secret_args_notes(entry.command or entry.args)]
    if entry.command:
        lines.append(
            "# the space's server command with the settings appended"
            + (f"; {entry.command_note}" if entry.command_note else "")
        )
        lines += ["ExecStart=", "ExecStart=" + quoting.systemd_exec_line(entry.command)]
    elif entry.args:
        lines.append(f"# append to ExecStart: {quoting.systemd_exec_line(entry.args)}")
    return "\n".join(lines)


def secret_notes(entry: ConfigEntry) -> list[str]:
    """Every secret value of ``entry`` (env and command), one sentence each."""
    env = [
        f"{k}: secret, not kept by tuner: put its value in place of ***"
        for k, v in entry.env.items()
        if is_redacted(v)
    ]
    return env + secret_args_notes(entry.command or entry.args)


def secret_args_notes(entry_or_args: ConfigEntry | Sequence[str]) -> list[str]:
    """One sentence per secret value in an argv (or an entry's args): set it yourself."""
    args = entry_or_args if isinstance(entry_or_args, Sequence) else entry_or_args.args
    notes = []
    for i, arg in enumerate(args):
        flag, _, value = arg.partition("=")
        if value and is_redacted(value):
            notes.append(f"{flag}: secret, not kept by tuner: put its value in place of ***")
        elif is_redacted(arg) and i > 0:
            notes.append(f"{args[i - 1]}: secret, not kept by tuner: put its value in place of ***")
    return notes


def line_notes(entry: ConfigEntry, fmt: str) -> list[str]:
    """What must not go into a one-line format's output (stderr): the secrets to fill in."""
    if fmt == "docker":
        return [n for n in secret_notes(entry) if n.split(":")[0] in entry.env]
    return secret_args_notes(entry)


def _secret_comment(name: str, value: str) -> list[str]:
    if not is_redacted(value):
        return []
    return [f"# {name}: secret, not kept by tuner: put its value in place of ***"]
