"""``python -m tuner.sim``: the simulated vLLM server."""

from __future__ import annotations

import sys

from tuner.sim.cli import main

if __name__ == "__main__":
    sys.exit(main())
