"""A tiny progress bar on standard error (no dependency); silent when stderr is not a
terminal unless forced, so logs stay clean."""

from __future__ import annotations

import sys
import time
from typing import IO


class ProgressBar:
    """``bar.update(n)`` after each step; ``bar.close()`` ends the line."""

    def __init__(self, total: int, label: str, *, stream: IO[str] | None = None,
                 force: bool = False, width: int = 30) -> None:
        self.total = max(0, total)
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.enabled = force or self.stream.isatty()
        self.width = width
        self.done = 0
        self.start = time.monotonic()
        self._last = 0.0
        self._draw(final=False)

    def update(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n) if self.total else self.done + n
        now = time.monotonic()
        if now - self._last >= 0.1 or self.done >= self.total:
            self._draw(final=False)

    def _draw(self, *, final: bool) -> None:
        if not self.enabled:
            return
        self._last = time.monotonic()
        frac = self.done / self.total if self.total else 1.0
        filled = int(frac * self.width)
        rate = self.done / max(1e-9, self._last - self.start)
        line = (f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] "
                f"{self.done}/{self.total} {frac:4.0%} {rate:,.0f}/s")
        self.stream.write(line + ("\n" if final else ""))
        self.stream.flush()

    def close(self) -> None:
        self._draw(final=True)
