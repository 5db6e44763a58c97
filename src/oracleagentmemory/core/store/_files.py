"""Files a SQLite store creates, private from their first byte.

A new database file is created 0600 before SQLite opens it, and the folders the store makes
for it 0700, whatever the umask. Side files (the writers' lock file, the vector-index
snapshots) take the database file's own permissions, as SQLite's ``-wal`` and ``-shm`` files
do: 0600 for a store this library created, and a store an operator shared with a group
(``chmod 640``) keeps working for that group. Existing files are never re-moded: the library
neither loosens nor silently tightens what an operator chose.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700


def folder_mode(file_mode: int) -> int:
    """The mode of a folder holding files of ``file_mode``: each read bit gains its search
    bit (0600 -> 0700, 0640 -> 0750)."""
    return file_mode | ((file_mode & 0o444) >> 2)


def side_file_mode(database: str | os.PathLike[str]) -> int:
    """The mode for files created beside ``database``: its own read/write bits (the owner's
    always included), or 0600 when it cannot be read."""
    try:
        mode = stat.S_IMODE(os.stat(database).st_mode)
    except OSError:
        return PRIVATE_FILE
    return (mode & 0o666) | PRIVATE_FILE


def make_folders(path: Path, mode: int = PRIVATE_FOLDER) -> None:
    """Create ``path`` and any missing parent with exactly ``mode`` (the umask does not
    widen or narrow it); folders that exist are left as they are."""
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode)
        except FileExistsError:  # made meanwhile by another process: theirs
            continue
        os.chmod(folder, mode)


def create_file(path: Path | str, mode: int = PRIVATE_FILE) -> int:
    """Create ``path`` exclusively with exactly ``mode``; returns its descriptor (write-only).
    FileExistsError when something is there already (never followed, never re-moded)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)  # the umask may have taken bits away; never adds any
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_database_file(path: str) -> None:
    """Create an empty SQLite database file 0600 (and its folders 0700) unless one exists,
    so SQLite opens a file that was never readable by others (its ``-wal`` and ``-shm``
    files then copy that mode)."""
    target = Path(path)
    if target.exists():
        return
    make_folders(target.parent)
    with contextlib.suppress(FileExistsError):  # made meanwhile elsewhere: SQLite opens it
        os.close(create_file(target))


def open_lock_file(path: str, database: str) -> int:
    """Open (read-write) the lock file ``path`` beside ``database``, creating it with the
    database file's mode (:func:`side_file_mode`) when it is missing."""
    try:
        fd = create_file(path, side_file_mode(database))
    except FileExistsError:
        return os.open(path, os.O_RDWR | os.O_CLOEXEC)
    os.close(fd)  # created write-only: reopened read-write, as every later open is
    return os.open(path, os.O_RDWR | os.O_CLOEXEC)
