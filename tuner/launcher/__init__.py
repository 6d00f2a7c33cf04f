"""Start an inference server, wait until it is healthy, and stop every process it made.

``ServerProcess`` runs one launch (``LaunchSpec``); ``ensure_gpus_idle`` checks the
GPUs before it; ``reap_leftover`` stops a server a killed tuner left behind. The
pieces, one job each: ``spec`` (what to run, ports), ``identity`` (who a process
is), ``procfs`` (fast /proc reads, safe signals), ``tree`` (finding and stopping
the process tree), ``logfile``/``progress`` (following the log), ``load_phases``
(the phases of a load, from vLLM's log lines), ``shm`` (/dev/shm leftovers),
``gpu_hygiene`` (GPU hygiene), ``registry`` (stop at exit), ``server`` (start and
wait; ``spawn``: the process itself, ``exit_reason``: why it died before it was healthy),
``teardown`` (the stop and its ``StopReport``) and ``reap``. See docs/launcher.md.
"""

from tuner.launcher.gpu_hygiene import check_gpu_memory_back, ensure_gpus_idle
from tuner.launcher.identity import MARKER_ENV, ProcessIdentity
from tuner.launcher.load_phases import LoadPhases, load_phases
from tuner.launcher.progress import LoadProgress, error_line, parse_progress
from tuner.launcher.reap import reap_leftover
from tuner.launcher.registry import stop_all
from tuner.launcher.server import ServerProcess
from tuner.launcher.spec import LaunchSpec, free_port, parse_visible_devices, port_in_use
from tuner.launcher.teardown import StopReport

__all__ = [
    "MARKER_ENV",
    "LaunchSpec",
    "LoadPhases",
    "LoadProgress",
    "ProcessIdentity",
    "ServerProcess",
    "StopReport",
    "check_gpu_memory_back",
    "ensure_gpus_idle",
    "error_line",
    "free_port",
    "load_phases",
    "parse_progress",
    "parse_visible_devices",
    "port_in_use",
    "reap_leftover",
    "stop_all",
]
