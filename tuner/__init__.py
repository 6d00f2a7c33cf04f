"""tuner: find the best launch settings for an LLM inference server, and tell a real gain
from noise.

``tuner.__version__`` is read from the installed distribution's metadata when first asked
for (not at import: every ``import tuner.x`` would pay for the metadata scan).
"""

from __future__ import annotations

_DISTRIBUTIONS = ("launch-tuner", "tuner")
"""The distribution's name, then its name before the rename (an install not yet redone)."""


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module 'tuner' has no attribute {name!r}")
    from importlib import metadata

    for dist in _DISTRIBUTIONS:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return "unknown (not installed: pip install -e .)"
