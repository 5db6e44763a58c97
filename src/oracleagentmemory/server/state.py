"""What one server process holds: the client(s) on the store, the key table, record facts."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from oracleagentmemory.admin.apikeys import ApiKey, ApiKeyStore
from oracleagentmemory.admin.connect import Target, open_client, share_writes
from oracleagentmemory.admin.db import Database
from oracleagentmemory.admin.storerows import StoreRows
from oracleagentmemory.server.errors import ApiError

DEFAULT_MAX_BODY = 1 << 20
"""Largest JSON request body accepted, in bytes (``--max-body-bytes``)."""
DEFAULT_MAX_IMAGE = 10 << 20
"""Largest image upload (the SDK's default ``max_raw_image_bytes``); multipart framing and
form fields may add 64 KiB."""
ENV = "OAM_SERVER_SETTINGS"
"""How ``oam serve`` hands its settings to worker processes (JSON; the DSN inside is never
logged)."""
STRATEGIES = ("vector", "keyword", "hybrid")


@dataclass(frozen=True)
class ServerSettings:
    """Where the store is and how to open it."""

    dsn: str = field(repr=False)
    memory_store_id: str | None = None
    schema_owner: str | None = None
    embedder: str | None = None
    search_strategy: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_image_bytes: int = DEFAULT_MAX_IMAGE
    llm: dict[str, str] | None = None
    """The extraction LLM (``model``, ``api_base``, ``api_key_env``; never the key itself)."""
    end_user_roles: bool = False
    """Run each request of a one-user key as that user's PostgreSQL role (row security)."""
    read_dsn: str | None = field(default=None, repr=False)
    """A PostgreSQL hot standby the clients read from (``--read-dsn``; never created on)."""

    @property
    def target(self) -> Target:
        return Target(self.dsn, self.memory_store_id, self.schema_owner)

    def to_env(self) -> str:
        import json

        return json.dumps(self.__dict__)

    @classmethod
    def from_env(cls) -> ServerSettings:
        import json

        raw = os.environ.get(ENV)
        if not raw:
            raise RuntimeError(f"{ENV} is not set (start the server with `oam serve`)")
        return cls(**json.loads(raw))


class ServerState:
    """The open client (one per search strategy, opened on first use), key table and
    record-fact reader of this process."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self.default_strategy = (settings.search_strategy or "vector").lower()
        self._clients: dict[str, Any] = {
            self.default_strategy: open_client(
                settings.target,
                embedder=settings.embedder,
                search_strategy=settings.search_strategy,
                create=True,
                llm=settings.llm,
                read_dsn=settings.read_dsn,
            )
        }
        self.keys = ApiKeyStore(settings.target)
        self._db = Database(settings.target)
        self._rows = StoreRows(self._db, settings.memory_store_id)
        self._rows_lock = threading.Lock()
        self.ready = False
        """Whether this process can serve: the store is open and the embedder loaded
        (``/readyz``); set by :meth:`load`, cleared by :meth:`close`."""

    def load(self) -> None:
        """Load the embedding model (seconds for the bundled one) and mark the process ready."""
        from oracleagentmemory.admin.serving import load_embedder

        load_embedder(self.client)
        self.ready = True

    @property
    def client(self) -> Any:
        return self._clients[self.default_strategy]

    def client_for(self, strategy: str | None) -> Any:
        """The client whose store searches with ``strategy`` (None = the server's)."""
        name = (strategy or self.default_strategy).lower()
        if name not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}")
        with self._lock:
            if name not in self._clients:
                self._clients[name] = open_client(
                    self.settings.target,
                    embedder="none" if name == "keyword" else self.settings.embedder,
                    search_strategy=name,
                    create=True,
                    read_dsn=self.settings.read_dsn,
                )  # searches only: the LLM (extraction) stays with the writing client
                share_writes(self._clients[name], self.client)
            return self._clients[name]

    def expiries(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
        if not keys:
            return {}
        with self._rows_lock:
            return self._rows.expiries(keys)

    def authenticate(self, header: str | None) -> ApiKey:
        """The key of an ``Authorization: Bearer`` header; 401 when absent or invalid."""
        if not header:
            raise ApiError(401, "missing API key: send 'Authorization: Bearer <key>'")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(401, "malformed Authorization header: expected 'Bearer <key>'")
        key = self.keys.verify(token.strip())
        if key is None:
            raise ApiError(401, "invalid or revoked API key")
        return key

    def close(self) -> None:
        self.ready = False
        for client in self._clients.values():
            client.close()
        self.keys.close()
        self._db.close()


def require_user(key: ApiKey, user_id: str | None) -> None:
    """403 unless ``key`` may touch records of ``user_id``."""
    if not key.allows(user_id):
        who = "records without a user" if user_id is None else f"user {user_id!r}"
        raise ApiError(403, f"this API key may not access {who}")


def require_admin(key: ApiKey) -> None:
    if not key.admin:
        raise ApiError(403, "this operation needs an admin API key")
