"""A private ``XDG_RUNTIME_DIR`` for processes that start pgserver (it asks platformdirs for one).

Set only where the environment has none, made once a process and removed when it exits, so
test and bench runs leave no empty ``/tmp/oam-xdg-*`` directories behind.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile


def ensure_runtime_dir() -> str:
    """The process's ``XDG_RUNTIME_DIR``: the environment's, else a new private one."""
    current = os.environ.get("XDG_RUNTIME_DIR")
    if current:
        return current
    made = tempfile.mkdtemp(prefix="oam-xdg-")
    os.environ["XDG_RUNTIME_DIR"] = made
    atexit.register(shutil.rmtree, made, True)
    return made
