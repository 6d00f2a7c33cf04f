"""Pre-flight checks of a space file: fail in seconds what a launch would fail after a load.

``check_space(space, storage=...)`` looks at everything that can be known before the
first launch, and returns a ``CheckReport`` of items (``ok``, ``warning``, ``error``):

- the server command exists (on PATH, or ``{python} -m MODULE`` importable), else the fix
  for the kind of server (``tuner.check.server_kind``: install or activate vLLM for a GPU
  server, the CPU build's script only for a CPU space): ``server.command``;
- every flag the space can produce (the command's own, each choice's and each range's)
  is one the server accepts, read once from its ``--help`` and cached per command
  (``~/.cache/tuner/help``; vLLM's grouped help is read as ``--help=all``), and a value
  the help lists choices for is one of them: ``params``, ``flags``; where the help cannot
  be read (no command, a failing or overlong ``--help``) a warning says "flags not
  checked" and why: ``flags``;
- NCCL variables are spelled as NCCL spells them (NCCL ignores an unknown name
  silently, so a typo is a knob that does nothing) and valued as NCCL accepts them: ``nccl``;
  P2P and SHM settings that overlap or leave the GPUs only the network: ``nccl_transport``;
  each NCCL_TUNER_CONFIG_FILE a table the tuner plugin reads (it exists, its rows parse,
  NCCL_TUNER_PLUGIN loads the plugin, the path is absolute): ``nccl_tuner``;
- what the ``screening:`` section adds: its flags checked with the params' (``flags``),
  its variables with NCCL's (``nccl``), none set by a param too; which params screening
  launches judge and, for the others, why not (none without the section): ``screening``;
  whether screening launches add vLLM's MoE routing simulation, and why
  (``tuner.check.moe_routing``): ``screening.moe_routing``;
- a fixed port is free, pinned CPUs exist, and the database is writable, creating no
  file: ``server.port``, ``server.cpus``, ``storage``;
- a model given as a local path exists, and with its config.json at hand the baseline is
  not ruled out by the model's shape (see ``tuner.space.model_limits``): ``model``;
- the space's probe can run and be sized here (a warning otherwise: the sweep then runs
  without it): ``probe``;
- the GPUs' topology (NVML, or the space's ``topology:`` file) in one line, and each param
  vLLM ignores on it with the server's TP size (``--disable-custom-all-reduce`` where
  vLLM's custom all-reduce is off anyway): ``topology``, ``params.NAME``;
- a vLLM GPU server's layout (TP x PP x DP) against the GPUs found: an error with fewer,
  a warning where NVML finds none (``tuner.check.gpu_count``): ``server.command``.

The sweep runs it before its first launch; ``tuner check --space FILE`` runs it alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from tuner.check.command import check_command, command_prefix
from tuner.check.flags import accepts, check_flags_against_help, flags_not_checked
from tuner.check.gpu_count import check_gpu_count
from tuner.check.help import (
    HELP_TIMEOUT_S,
    HelpReader,
    HelpText,
    default_cache_dir,
    run_help,
    server_help,
)
from tuner.check.host import check_cpus, check_port, check_storage
from tuner.check.model import check_model
from tuner.check.nccl import check_nccl, check_nccl_variable
from tuner.check.nccl_transport import check_nccl_transport
from tuner.check.nccl_tuner import check_nccl_tuner
from tuner.check.probe import check_probe
from tuner.check.report import CheckItem, CheckReport, Findings, Level
from tuner.check.screening import check_screening
from tuner.check.server_kind import command_advice, server_kind
from tuner.check.topology import check_topology, topology_for
from tuner.errors import ConfigError
from tuner.secrets import scrub, secret_values
from tuner.space.model_limits import baseline_argv
from tuner.space.spec import Space
from tuner.telemetry.topology import TopologyRead

__all__ = [
    "HELP_TIMEOUT_S",
    "CheckItem",
    "CheckReport",
    "HelpReader",
    "HelpText",
    "Level",
    "accepts",
    "check_nccl_variable",
    "check_space",
    "command_prefix",
    "default_cache_dir",
    "run_help",
    "server_help",
]


def check_space(
    space: Space,
    *,
    storage: str,
    help_cache_dir: Path | None = None,
    help_timeout_s: float = HELP_TIMEOUT_S,
    read_help: HelpReader | None = None,
    check_flags: bool = True,
    topology: TopologyRead | None = None,
) -> CheckReport:
    """Run every pre-flight check on a loaded space; never starts the server itself.

    ``topology`` is the GPUs' as the sweep read it; None: read here (``topology_for``)."""
    found = Findings()
    argv, env = baseline_argv(space)
    child_env = {**os.environ, **env}
    kind = server_kind(space, argv)
    command_ok = check_command(argv, child_env, found, command_advice(kind, argv[0]))
    if check_flags and not command_ok:
        found.add("warning", "flags", flags_not_checked("the server command was not found"))
    elif check_flags:
        help_text = server_help(
            argv,
            child_env,
            cache_dir=help_cache_dir,
            timeout_s=help_timeout_s,
            read_help=read_help,
        )
        check_flags_against_help(space, argv, help_text, found)
    check_nccl(space, found)
    check_nccl_transport(space, found)
    check_nccl_tuner(space, found)
    check_screening(space, found)
    check_port(space, found)
    check_cpus(space, found)
    check_storage(storage, found)
    check_model(space, argv, found, kind)
    check_probe(space, found)
    try:
        topo = topology if topology is not None else topology_for(space)
    except ConfigError as exc:
        found.add("error", "topology", str(exc))
    else:
        check_topology(space, topo, found)
        check_gpu_count(space, argv, kind, topo, found)
    # A message may quote a flag of the command or of screening.args (`--hf-token=...`):
    # never its secret value.
    extra = space.spec.screening
    if extra is not None:
        argv, env = [*argv, *extra.args], {**env, **extra.env}
    hide = secret_values(argv, env)
    items = (CheckItem(i.level, i.key, scrub(i.message, hide)) for i in found.items)
    return CheckReport(space=str(space.path), items=tuple(items))
