"""GPU telemetry during a benchmark: every GPU's ``GpuSample`` once per ``interval_s``."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from tuner.telemetry.gpu import GpuBackend, GpuSample
from tuner.telemetry.sampler import PeriodicSampler

log = logging.getLogger(__name__)


class GpuSampler(PeriodicSampler[GpuSample]):
    """Samples the given GPU indices (default: all) through a ``GpuBackend``.

    With a backend that has no GPUs (``NullGpuBackend``) it starts no thread and
    ``stop()`` returns ``[]``, so callers need no special case. One GPU failing a
    reading does not lose the others' readings for that tick.

    At the default 1 s an 8-GPU box keeps 100k samples (the default bound) for
    about 3.5 hours; a sweep makes one sampler per launch, so that is never reached.
    """

    thread_name = "tuner-gpu-sampler"

    def __init__(
        self,
        backend: GpuBackend,
        indices: Sequence[int] | None = None,
        *,
        interval_s: float = 1.0,
        max_samples: int = 100_000,
    ) -> None:
        super().__init__(interval_s, max_records=max_samples)
        self.backend = backend
        if indices is None:
            indices = range(backend.device_count()) if backend.available else ()
        self.indices: tuple[int, ...] = tuple(indices)

    def _enabled(self) -> bool:
        return bool(self.backend.available and self.indices)

    def _read(self) -> Iterable[GpuSample]:
        samples: list[GpuSample] = []
        for index in self.indices:
            try:
                samples.append(self.backend.sample(index))
            except Exception as exc:  # noqa: BLE001 - keep the other GPUs' readings
                self._record_error(exc)
        return samples
