"""A tiny progress bar on standard error (no dependency); silent when stderr is not a
terminal unless forced (or always, when quiet), so logs stay clean."""

from __future__ import annotations

import sys
import time
from typing import IO


class ProgressBar:
    """``bar.update(n)`` after each step; ``bar.close()`` ends the line."""

    def __init__(
        self,
        total: int,
        label: str,
        *,
        stream: IO[str] | None = None,
        force: bool = False,
        quiet: bool = False,
        width: int = 30,
    ) -> None:
        self.total = max(0, total)
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.enabled = not quiet and (force or self.stream.isatty())
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
        elapsed = self._last - self.start
        rate = self.done / max(1e-9, elapsed)
        line = (
            f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] "
            f"{self.done}/{self.total} {frac:4.0%} {rate:,.0f}/s "
            + (f"in {_clock(elapsed)}" if final else f"ETA {self.eta()}")
        )
        self.stream.write(line + ("\n" if final else ""))
        self.stream.flush()

    def eta(self) -> str:
        """The time left at the rate so far, ``m:ss`` (``--:--`` before the first step)."""
        elapsed = time.monotonic() - self.start
        if self.done <= 0 or not self.total:
            return "--:--"
        return _clock(elapsed * (self.total - self.done) / self.done)

    def close(self) -> None:
        self._draw(final=True)


def _clock(seconds: float) -> str:
    """``h:mm:ss`` or ``m:ss``."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
