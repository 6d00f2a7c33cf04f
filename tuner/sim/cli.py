"""``python -m tuner.sim`` / ``tuner sim``: parse the command line, then run the server.

Kept import-light (argparse and the pure modules only) so the process reaches its first log
line fast; asyncio and aiohttp come later.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from tuner.sim.settings import ArgError, build_parser, parse_settings


def _usage_error(message: str) -> int:
    parser = build_parser()
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr, flush=True)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the simulated vLLM server; returns the process exit code.

    0: stopped by SIGTERM/SIGINT (or ``--help``); 1: a startup refusal, printed like the real
    stack prints it; 2: a malformed command line.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        settings = parse_settings(args, os.environ, strict=False)
    except ArgError as exc:
        return _usage_error(str(exc))
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    if settings.port is None:
        return _usage_error("the following arguments are required: --port")
    import asyncio  # noqa: PLC0415 - deferred: keeps --help and usage errors fast

    from tuner.sim.startup import run_server  # noqa: PLC0415

    return asyncio.run(run_server(settings, args, os.environ))
