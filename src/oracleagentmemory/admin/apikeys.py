"""API keys for the REST server, kept in the store's own database.

A key looks like ``oam_<key id>_<secret>``. Only a SHA-256 digest of the whole key is stored
(the secret has 256 random bits, so a fast digest is safe), in the table
``<memory_store_id>_api_keys``, created on first use. Each key is bound to the user ids it may
touch; an admin key may touch every user and the store-wide operations (agents, purge).

A browser logged in to ``/ui`` holds a session id, never the key: ``oams_<secret>``, stored
as a digest in ``<memory_store_id>_ui_sessions`` beside the keys (so every worker process
of a server shares it), ending after ``SESSION_IDLE_SECONDS`` without use or
``SESSION_MAX_SECONDS`` after log-in, at log-out, and with its key. It is not a key: the
REST API refuses it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from oracleagentmemory.admin.connect import Target
from oracleagentmemory.admin.db import DEFAULT_STORE_ID, Database

_KEY = re.compile(r"^oam_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
CACHE_SECONDS = 5.0
"""How long a verified key is trusted without reading the table again (revocation delay)."""
_SESSION = re.compile(r"^oams_[A-Za-z0-9_-]{43}$")
SESSION_IDLE_SECONDS = 30 * 60
"""A ``/ui`` session unused this long has ended."""
SESSION_MAX_SECONDS = 12 * 3600
"""A ``/ui`` session ends this long after its log-in, however busy."""
_SESSION_TOUCH_SECONDS = 30
"""A session's last use is written at most this often (not on every page)."""


@dataclass(frozen=True)
class ApiKey:
    """A stored key's public facts (never the secret)."""

    key_id: str
    user_ids: tuple[str, ...]
    admin: bool
    label: str | None
    created_at: str
    revoked_at: str | None

    def allows(self, user_id: str | None) -> bool:
        """Whether this key may touch records of ``user_id`` (None = records of no user,
        which only an admin key may touch)."""
        return self.admin or (user_id is not None and user_id in self.user_ids)


def _digest(key: str) -> str:
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def _check_user_ids(user_ids: list[str]) -> tuple[str, ...]:
    out = []
    for u in user_ids:
        if not isinstance(u, str) or not u.strip():
            raise ValueError("user ids bound to a key must be non-empty strings")
        out.append(u)
    return tuple(dict.fromkeys(out))


class ApiKeyStore:
    """The key table of one store; safe to share between threads."""

    def __init__(self, target: Target, *, create: bool = True) -> None:
        """``create=False``: the database must exist already (``SchemaError`` if not)."""
        self._db = Database(target, create=create)
        store_id = target.memory_store_id or DEFAULT_STORE_ID
        self._table = self._db.qualify(f"{store_id}_api_keys")
        self._sessions = self._db.qualify(f"{store_id}_ui_sessions")
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, ApiKey | None]] = {}
        self._ensured = False

    def _ensure(self) -> None:
        if self._ensured:
            return
        self._db.execute(
            f"CREATE TABLE IF NOT EXISTS {self._table} ("
            " key_id TEXT PRIMARY KEY,"
            " key_hash TEXT NOT NULL,"
            " user_ids TEXT NOT NULL,"
            " is_admin INTEGER NOT NULL DEFAULT 0,"
            " label TEXT,"
            " created_at TEXT NOT NULL,"
            " revoked_at TEXT)"
        )
        self._db.execute(
            f"CREATE TABLE IF NOT EXISTS {self._sessions} ("
            " session_hash TEXT PRIMARY KEY,"
            " key_id TEXT NOT NULL,"
            " created_at BIGINT NOT NULL,"
            " last_seen BIGINT NOT NULL)"
        )
        self._ensured = True

    def create(
        self, user_ids: list[str], *, admin: bool = False, label: str | None = None
    ) -> tuple[str, ApiKey]:
        """Make a key bound to ``user_ids``; returns the key itself (shown once) and its facts."""
        users = _check_user_ids(user_ids)
        if not users and not admin:
            raise ValueError("a key needs at least one --user (or --admin)")
        key_id = secrets.token_hex(8)
        key = f"oam_{key_id}_{secrets.token_urlsafe(32)}"
        now = datetime.now(UTC).isoformat()
        with self._lock:
            self._ensure()
            self._db.execute(
                f"INSERT INTO {self._table} (key_id, key_hash, user_ids, is_admin, label,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                [key_id, _digest(key), json.dumps(list(users)), int(admin), label, now],
            )
        return key, ApiKey(key_id, users, admin, label, now, None)

    def list(self) -> list[ApiKey]:
        with self._lock:
            self._ensure()
            rows = self._db.execute(
                f"SELECT key_id, user_ids, is_admin, label, created_at, revoked_at"
                f" FROM {self._table} ORDER BY created_at, key_id"
            )
        return [
            ApiKey(str(k), tuple(json.loads(u)), bool(a), lbl, str(c), r)
            for k, u, a, lbl, c, r in rows
        ]

    def revoke(self, key_id: str) -> bool:
        """Revoke a key by id; False when there is no such active key."""
        now = datetime.now(UTC).isoformat()
        with self._lock:
            self._ensure()
            found = self._db.execute(
                f"SELECT key_id FROM {self._table} WHERE key_id = ? AND revoked_at IS NULL",
                [key_id],
            )
            if not found:
                return False
            with self._db.transaction():
                self._db.execute(
                    f"UPDATE {self._table} SET revoked_at = ? WHERE key_id = ?", [now, key_id]
                )
                self._db.execute(f"DELETE FROM {self._sessions} WHERE key_id = ?", [key_id])
            self._cache.clear()
        return True

    def verify(self, key: str) -> ApiKey | None:
        """The key's facts when ``key`` is a valid, unrevoked key; else None."""
        m = _KEY.match(key)
        if m is None:
            return None
        now = time.monotonic()
        digest = _digest(key)
        with self._lock:
            hit = self._cache.get(digest)
            if hit is not None and now - hit[0] < CACHE_SECONDS:
                return hit[1]
            self._ensure()
            rows = self._db.execute(
                f"SELECT key_hash, user_ids, is_admin, label, created_at, revoked_at"
                f" FROM {self._table} WHERE key_id = ?",
                [m.group(1)],
            )
            found: ApiKey | None = None
            if rows:
                stored, users, adm, label, created, revoked = rows[0]
                if hmac.compare_digest(str(stored), digest) and revoked is None:
                    found = ApiKey(
                        m.group(1), tuple(json.loads(users)), bool(adm), label, str(created), None
                    )
            if len(self._cache) > 10000:
                self._cache.clear()
            self._cache[digest] = (now, found)
        return found

    # ------------------------------------------------------------------ /ui sessions

    def start_session(self, key: ApiKey) -> str | None:
        """A new ``/ui`` session for ``key`` (verified by the caller); returns its id, which
        only the browser keeps (the table holds its digest), or None when the key has been
        revoked meanwhile (read afresh, past :meth:`verify`'s cache). Ended sessions are
        cleared."""
        session = f"oams_{secrets.token_urlsafe(32)}"
        now = int(time.time())
        with self._lock:
            self._ensure()
            with self._db.transaction():
                self._db.execute(
                    f"DELETE FROM {self._sessions} WHERE created_at < ? OR last_seen < ?",
                    [now - SESSION_MAX_SECONDS, now - SESSION_IDLE_SECONDS],
                )
                live = self._db.execute(
                    f"SELECT 1 FROM {self._table} WHERE key_id = ? AND revoked_at IS NULL",
                    [key.key_id],
                )
                if not live:
                    return None
                self._db.execute(
                    f"INSERT INTO {self._sessions} (session_hash, key_id, created_at, last_seen)"
                    " VALUES (?, ?, ?, ?)",
                    [_digest(session), key.key_id, now, now],
                )
        return session

    def session(self, session: str) -> ApiKey | None:
        """The facts of the key a live ``/ui`` session was opened with; None when the id is
        unknown, ended (idle, too old, logged out) or its key is revoked. Read every time:
        an ended session is refused at once by every worker."""
        if not isinstance(session, str) or _SESSION.match(session) is None:
            return None
        now = int(time.time())
        digest = _digest(session)
        with self._lock:
            self._ensure()
            rows = self._db.execute(
                f"SELECT s.created_at, s.last_seen, k.key_id, k.user_ids, k.is_admin, k.label,"
                f" k.created_at FROM {self._sessions} s JOIN {self._table} k"
                " ON k.key_id = s.key_id"
                " WHERE s.session_hash = ? AND k.revoked_at IS NULL",
                [digest],
            )
            if not rows:
                return None
            started, seen, key_id, users, adm, label, created = rows[0]
            if now - int(started) >= SESSION_MAX_SECONDS or now - int(seen) >= SESSION_IDLE_SECONDS:
                self._db.execute(f"DELETE FROM {self._sessions} WHERE session_hash = ?", [digest])
                return None
            if now - int(seen) >= _SESSION_TOUCH_SECONDS:
                self._db.execute(
                    f"UPDATE {self._sessions} SET last_seen = ? WHERE session_hash = ?",
                    [now, digest],
                )
        return ApiKey(str(key_id), tuple(json.loads(users)), bool(adm), label, str(created), None)

    def end_session(self, session: str) -> None:
        """Log a ``/ui`` session out: its id is refused from now on, by every worker."""
        if not isinstance(session, str) or _SESSION.match(session) is None:
            return
        with self._lock:
            self._ensure()
            self._db.execute(
                f"DELETE FROM {self._sessions} WHERE session_hash = ?", [_digest(session)]
            )

    def close(self) -> None:
        self._db.close()
