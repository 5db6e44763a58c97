"""Which distribution installs this package, and the check that Oracle's is not installed beside it.

This project is distributed as ``recallwell`` and installs the import package
``oracleagentmemory``, so that code written for Oracle's SDK runs unchanged (as Pillow installs
``PIL``). Oracle's own distribution, also named ``oracleagentmemory``, installs a package of the
same name: with both in one environment their files overwrite each other and neither works.
The check reads directory names on ``sys.path`` only (no ``importlib.metadata``), so it costs a
fraction of a millisecond at import.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

DISTRIBUTION = "recallwell"
CONFLICTING_DISTRIBUTION = "oracleagentmemory"


def conflicting_installs(paths: Iterable[str] | None = None) -> list[str]:
    """The metadata folders of a distribution named ``oracleagentmemory`` found on ``paths``."""
    found: list[str] = []
    for entry in sys.path if paths is None else paths:
        try:
            with os.scandir(entry or ".") as listing:
                names = [item.name for item in listing]
        except OSError:  # a zip file, a missing folder, an unreadable one
            continue
        for name in names:
            lowered = name.lower()
            if not lowered.endswith((".dist-info", ".egg-info")):
                continue
            stem = lowered.rsplit(".", 1)[0]
            if stem == CONFLICTING_DISTRIBUTION or stem.startswith(CONFLICTING_DISTRIBUTION + "-"):
                found.append(os.path.join(entry, name))
    return found


def _version_of(folder: str) -> str:
    stem = os.path.basename(folder).rsplit(".", 1)[0]
    return stem.split("-", 1)[1] if "-" in stem else "(unknown version)"


def check_no_conflict() -> None:
    """Raise ImportError when Oracle's ``oracleagentmemory`` distribution is installed too."""
    found = conflicting_installs()
    if not found:
        return
    where = found[0]
    raise ImportError(
        f"two distributions in this environment install the 'oracleagentmemory' package: "
        f"'{DISTRIBUTION}' (this independent implementation) and 'oracleagentmemory' "
        f"{_version_of(where)} (Oracle's SDK, or an early build of this project under that "
        f"name), found at {where}. Their files overwrite each other, so neither works. Keep "
        f"one: pip uninstall -y oracleagentmemory {DISTRIBUTION} && pip install {DISTRIBUTION} "
        f"(or keep Oracle's SDK in a virtual environment of its own)"
    )
