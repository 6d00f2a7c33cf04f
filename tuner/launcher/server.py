"""``ServerProcess``: start one server, wait until it is healthy, stop all of it.

Start: a new session (so Ctrl-C in tuner's terminal does not reach it and its
whole tree can be found), output appended to the launch's log file, the launch
marker in its environment, CPU affinity inherited from the spawning thread
(``spawn.py``). Wait: poll ``/health`` from a thread while the caller's loop watches
the process (exit noticed within ~0.1 s; why it exited: ``exit_reason.py``) and follows
the log for progress. Stop: end the watcher, then ``teardown.py`` (the tree, shared
memory, the GPUs' memory, the ``StopReport``), then the log's footer. ``StopReport``,
``early_exit_reason`` and ``REASON_TAIL_LINES`` are re-exported from here.
"""

from __future__ import annotations

import logging
import shlex
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import httpx
import psutil

from tuner.errors import LaunchError, PortTakenError
from tuner.launcher import registry
from tuner.launcher.exit_reason import REASON_TAIL_LINES, early_exit_error, early_exit_reason
from tuner.launcher.gpu_hygiene import memory_snapshot
from tuner.launcher.identity import MARKER_ENV, ProcessIdentity
from tuner.launcher.logfile import LogFollower, read_tail
from tuner.launcher.procfs import describe, read_stat
from tuner.launcher.progress import LoadProgress
from tuner.launcher.shm import SHM_DIR, ShmTracker
from tuner.launcher.spawn import check_affinity, log_header, open_log, spawn
from tuner.launcher.spec import LaunchSpec, port_in_use, port_listeners
from tuner.launcher.teardown import NOTHING_TO_STOP, StopReport, Teardown, peek_exit_code
from tuner.launcher.tree import ProcessTree
from tuner.secrets import redact_argv
from tuner.server_http import server_client
from tuner.telemetry.gpu import GpuBackend

__all__ = ["REASON_TAIL_LINES", "WAIT_STEP_S", "ServerProcess", "StopReport", "early_exit_reason"]

logger = logging.getLogger("tuner.launcher")

WAIT_STEP_S = 0.1  # how often wait_healthy looks at the process: the exit-detection latency


class ServerProcess:
    """One launch of the server described by a LaunchSpec. Not reusable: one start.

    Use as a context manager so it is stopped whatever happens::

        with ServerProcess(spec, gpu=gpu) as server:
            identity = server.start()      # record it before waiting
            seconds = server.wait_healthy(on_progress=show)
            ...
        report = server.stop()             # idempotent: the report of the first stop
    """

    def __init__(
        self,
        spec: LaunchSpec,
        *,
        gpu: GpuBackend | None = None,
        shm_dir: Path = SHM_DIR,
        health_poll_s: float = 0.25,
        track_interval_s: float = 1.0,
    ) -> None:
        self.spec = spec
        self.gpu = gpu
        self.marker = uuid.uuid4().hex
        self.health_poll_s = health_poll_s
        self.track_interval_s = track_interval_s
        self._shm = ShmTracker(shm_dir)
        self._popen: subprocess.Popen[bytes] | None = None
        self._identity: ProcessIdentity | None = None
        self._tree: ProcessTree | None = None
        self._gpu_baseline: dict[int, float] = {}
        self._started_at = 0.0
        self._log_offset = 0
        self._report: StopReport | None = None
        self._lock = threading.RLock()
        self._watch_stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._extra_killed: list[int] = []

    # -- facts -----------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen is not None else None

    @property
    def identity(self) -> ProcessIdentity | None:
        return self._identity

    @property
    def log_path(self) -> Path:
        return self.spec.log_path

    @property
    def url(self) -> str:
        """The server's base URL, e.g. http://127.0.0.1:8000."""
        return self.spec.health_url[: -len(self.spec.health_path)]

    def exit_code(self) -> int | None:
        """The leader's exit status (negative: killed by that signal); None while it runs.

        The leader stays a zombie until stop() reaps it (see ``peek_exit_code``).
        """
        return peek_exit_code(self._popen) if self._popen is not None else None

    def is_running(self) -> bool:
        """Started, not stopped, and the leader has not exited."""
        return self._popen is not None and self._report is None and self.exit_code() is None

    def log_tail(self, lines: int = 50) -> str:
        """The last lines of the log file, read from its end."""
        return read_tail(self.spec.log_path, lines)

    # -- start -----------------------------------------------------------------------

    def start(self) -> ProcessIdentity:
        """Start the server and return at once with its identity (store it, then wait)."""
        with self._lock:
            if self._popen is not None or self._report is not None:
                raise RuntimeError("a ServerProcess starts once; make a new one")
            spec = self.spec
            if port_in_use(spec.host, spec.port):
                holders = ", ".join(describe(pid) for pid in port_listeners(spec.port))
                raise PortTakenError(
                    f"port {spec.port} on {spec.host} is already in use"
                    + (f" by {holders}" if holders else "")
                    + ": stop that server or use port: auto"
                )
            self._shm.snapshot()
            self._gpu_baseline = memory_snapshot(self.gpu, spec.gpu_devices)
            env = spec.child_env()
            env[MARKER_ENV] = self.marker
            spec.log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with open_log(spec.log_path) as log:
                log.write(log_header(spec, self.marker).encode())
                log.flush()
                self._log_offset = log.tell()
                self._started_at = time.monotonic()
                popen = spawn(spec, env, log)
            # From here on the process exists: make it stoppable before anything else.
            self._popen = popen
            stat = read_stat(popen.pid)  # our unreaped child: readable even if it exited
            self._tree = ProcessTree(
                leader=popen.pid,
                leader_ticks=stat.start_ticks if stat else None,
                session=popen.pid,  # start_new_session: session id == group id == pid
                marker=self.marker,
            )
            registry.register(self)
            registry.install_signal_handlers()
            self._identity = self._capture_identity()
            check_affinity(popen.pid, spec.cpus)
            self._watcher = threading.Thread(
                target=self._watch, name=f"tuner-watch-{popen.pid}", daemon=True
            )
            self._watcher.start()
            logger.info("started server pid %d: %s", popen.pid, shlex.join(redact_argv(spec.argv)))
            return self._identity

    def _capture_identity(self) -> ProcessIdentity:
        assert self._popen is not None
        pid = self._popen.pid
        try:
            return ProcessIdentity.capture(pid, marker=self.marker, argv=self.spec.argv)
        except psutil.Error:
            # Cannot happen for an unreaped child, but a start must not fail on it.
            return ProcessIdentity(
                pid=pid, pgid=pid, create_time=time.time(), cmdline=tuple(self.spec.argv),
                hostname=socket.gethostname(), marker=self.marker,
            )  # fmt: skip

    def _watch(self) -> None:
        # Keep the tree up to date while the server runs, so a process that later
        # leaves it (parent died, setsid) is still known at stop time.
        assert self._tree is not None
        rounds = 0
        while not self._watch_stop.wait(self.track_interval_s):
            try:
                members = self._tree.refresh()
                if rounds % 5 == 0:
                    self._shm.observe(members)
            except Exception:  # noqa: BLE001 - a scan must not kill the watcher
                logger.debug("process tree scan failed", exc_info=True)
            rounds += 1

    # -- wait ------------------------------------------------------------------------

    def wait_healthy(
        self,
        *,
        on_progress: Callable[[LoadProgress], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> float:
        """Block until GET health_url answers 200; return seconds since start().

        Raises LaunchError if the server exits first (at once, with its exit code,
        the most telling log line and the log tail), if ``cancel`` is set, or after
        ``startup_timeout_s``. The caller stops the server in every case.
        """
        if self._popen is None:
            raise RuntimeError("wait_healthy() before start()")
        spec = self.spec
        follower = LogFollower(spec.log_path, start_offset=self._log_offset)
        healthy = threading.Event()
        stop_probe = threading.Event()
        prober = threading.Thread(
            target=self._probe, args=(healthy, stop_probe), name="tuner-health", daemon=True
        )
        prober.start()
        deadline = self._started_at + spec.startup_timeout_s
        try:
            while True:
                code = self.exit_code()
                if code is not None:
                    raise self._early_exit_error(code)
                state = follower.poll()
                if state is not None and on_progress is not None:
                    on_progress(state)
                if healthy.is_set():
                    self._warn_if_port_not_ours()
                    return time.monotonic() - self._started_at
                if cancel is not None and cancel.is_set():
                    raise LaunchError(
                        "startup cancelled before the server was healthy",
                        log_tail=self.log_tail(),
                    )
                if time.monotonic() >= deadline:
                    last = follower.last.line if follower.last else "(nothing)"
                    raise LaunchError(
                        f"server not healthy after {spec.startup_timeout_s:g} s "
                        f"(startup_timeout_s); last log line: {last}",
                        log_tail=self.log_tail(),
                    )
                healthy.wait(WAIT_STEP_S)
        finally:
            stop_probe.set()
            prober.join(timeout=0.5)  # daemon: if a request is in flight, let it end alone

    def _probe(self, healthy: threading.Event, stop: threading.Event) -> None:
        url = self.spec.health_url
        # server_client: never through the operator's HTTP(S)_PROXY, the API key if set.
        with server_client(timeout=httpx.Timeout(2.0, connect=0.5)) as client:
            while not stop.is_set():
                try:
                    if client.get(url).status_code == 200:
                        healthy.set()
                        return
                except httpx.HTTPError:
                    pass
                stop.wait(self.health_poll_s)

    def _early_exit_error(self, code: int) -> LaunchError:
        # vLLM's root cause (the worker's ValueError) can be 150 lines above the end, under
        # the tracebacks of the processes that wrap it: look further back for the reason.
        return early_exit_error(code, self.log_tail(REASON_TAIL_LINES), self.log_tail())

    def _warn_if_port_not_ours(self) -> None:
        # Best effort: a stranger on the port would be benchmarked instead of our
        # server. Only a warning: a server run through a proxy (docker) is legitimate.
        if self._tree is None:
            return
        port = self.spec.port
        members = self._tree.refresh()
        for pid in members:
            try:
                conns = psutil.Process(pid).net_connections(kind="tcp")
            except psutil.Error:
                return  # cannot tell
            if any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in conns):
                return
        holders = ", ".join(describe(pid) for pid in port_listeners(port)) or "another process"
        logger.warning(
            "%s answers, but no process of this launch listens on port %d (%s does)",
            self.spec.health_url,
            port,
            holders,
        )

    # -- stop ------------------------------------------------------------------------

    def stop(self) -> StopReport:
        """Stop the whole tree, clean /dev/shm, check the GPUs; idempotent.

        Safe from ``except KeyboardInterrupt`` and ``finally``. A second Ctrl-C
        during the graceful wait kills everything at once; the KeyboardInterrupt is
        re-raised after the cleanup (the report is kept: stop() again returns it).
        """
        with self._lock:
            if self._report is not None:
                return self._report
            if self._popen is None or self._tree is None:
                self._report = NOTHING_TO_STOP
                return self._report
            return self._stop(self._tree)

    def _stop(self, tree: ProcessTree) -> StopReport:
        assert self._popen is not None
        started = time.monotonic()
        pending: BaseException | None = None
        try:
            self._watch_stop.set()
            if self._watcher is not None:
                self._watcher.join(timeout=5)
            self._shm.observe(tree.refresh(deep=True))
        except Exception:  # noqa: BLE001 - observation is a bonus, the stop must go on
            logger.debug("shm observation failed", exc_info=True)
        except BaseException as exc:  # Ctrl-C already: no graceful wait, kill at once
            pending = exc
        teardown = Teardown(
            self.spec,
            popen=self._popen,
            tree=tree,
            shm=self._shm,
            gpu=self.gpu,
            gpu_baseline=self._gpu_baseline,
            marker=self.marker,
        )
        report, pending = teardown.run(started=started, pending=pending)
        self._report = report
        registry.unregister(self)
        self._append_footer(report)
        log = logger.info if report.clean else logger.warning
        log("server pid %s %s", self.pid, report.summary())
        if pending is not None:
            raise pending
        return report

    def _append_footer(self, report: StopReport) -> None:
        try:
            with open(self.spec.log_path, "a") as log:
                log.write(f"\n# tuner: {report.summary()}\n")
        except OSError:
            pass

    # -- context manager -------------------------------------------------------------

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
