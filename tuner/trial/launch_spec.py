"""How to start the server for one trial's settings: argv, env, unset variables, log, GPUs.

The runner launches from this, the probe runs its argv with the same env, and the GPU
lock asks which GPUs a server uses; one function builds it, so they cannot disagree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from tuner.check.moe_routing import decided_moe_routing
from tuner.launcher import LaunchSpec, parse_visible_devices
from tuner.space.secret_params import launch_settings
from tuner.space.settings import Settings, server_argv, server_env
from tuner.space.spec import Space
from tuner.telemetry.gpu import GpuBackend


def launch_spec_for(
    space: Space,
    settings: Settings,
    *,
    port: int,
    trial_dir: Path,
    gpu: GpuBackend | None = None,
    screening: bool = False,
) -> LaunchSpec:
    """How to start the server for these settings: argv, env, unset variables, log file.

    ``screening``: a screening launch, the space's ``screening.args`` after the trial's and
    its ``screening.env`` over the rest (tuner/space/screening.py), with vLLM's MoE routing
    simulation where tuner/check/moe_routing.py says so; never on a full launch.

    The server's env is built here once; its ``CUDA_VISIBLE_DEVICES`` (or tuner's own)
    names the GPUs to watch, UUIDs resolved through ``gpu``. A secret param's real value
    goes in here, and only here (``launch_settings``).
    """
    settings = launch_settings(space, settings)
    server = space.spec.server
    names = {
        "trial_dir": str(trial_dir),
        "study_dir": str(trial_dir.parent),
        # The space file's folder: a model or script shipped beside the space (vllm-cpu.yaml).
        "space_dir": str(space.path.resolve().parent),
    }
    env = server_env(server, settings, port=port, **names)
    argv = server_argv(server, settings, port=port, **names)
    extra = space.spec.screening if screening else None
    routing: dict[str, str] = {}
    if extra is not None:
        argv += list(extra.args)
        routing = decided_moe_routing(space).env()
        env.update({**routing, **extra.env})
    return LaunchSpec(
        argv=argv,
        env=env,
        # `default` removes a variable from the inherited environment too, unless the
        # space's fixed env sets it on purpose.
        unset=frozenset(
            settings.unset - set(server.env) - set(extra.env if extra else ()) - set(routing)
        ),
        host=server.host,
        port=port,
        health_path=server.health_path,
        startup_timeout_s=server.startup_timeout_s,
        stop_timeout_s=server.stop_timeout_s,
        log_path=trial_dir / "server.log",
        cpus=server.cpus,
        gpu_devices=server_gpus(env, gpu),
    )


def server_gpus(server_env: Mapping[str, str], gpu: GpuBackend | None) -> list[int] | None:
    """The GPUs a server with this env uses: its CUDA_VISIBLE_DEVICES, else tuner's own.

    None means every GPU (or the answer is unknown: check them all, the safe side).
    """
    value = server_env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))
    return parse_visible_devices(value, gpu)
