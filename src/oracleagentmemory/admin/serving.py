"""What the servers (``oam serve`` and ``oam mcp``) share: loading the embedding model before
the first request, loopback detection, the warning for a server reachable from the network,
and a uvicorn protocol that cuts off clients that send their requests too slowly.

:class:`DeadlineH11Protocol` closes a connection whose request head and body have not
arrived within ``REQUEST_TIMEOUT_S`` (a client trickling bytes holds a connection that long at
most). Imported only by the servers (it needs uvicorn).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import sys
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

REQUEST_TIMEOUT_S = 60.0
"""Longest time a client may take to send one request (head and body), in seconds, unless
``--request-timeout`` (``$OAM_REQUEST_TIMEOUT_S``) says otherwise."""
TIMEOUT_ENV = "OAM_REQUEST_TIMEOUT_S"


def request_timeout() -> float:
    """The deadline in force: ``$OAM_REQUEST_TIMEOUT_S`` (set by ``--request-timeout``, so the
    worker processes see it too), else :data:`REQUEST_TIMEOUT_S`."""
    raw = os.environ.get(TIMEOUT_ENV)
    try:
        value = float(raw) if raw else REQUEST_TIMEOUT_S
    except ValueError:
        return REQUEST_TIMEOUT_S
    return value if value > 0 else REQUEST_TIMEOUT_S


HTTP_PROTOCOL = "oracleagentmemory.admin.serving:DeadlineH11Protocol"
"""uvicorn's ``http`` setting for both servers."""


def load_embedder(client: Any) -> None:
    """Load ``client``'s embedding model now, by embedding one short query, so that no
    request pays for loading it (seconds for the bundled model). No-op without an embedder."""
    embedder = getattr(client.store, "embedder", None)
    if embedder is not None:
        embedder.embed(["ready"], is_query=True)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback name or address (only local processes can connect)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def network_warning(host: str, what: str) -> str | None:
    """The warning printed when a server listens beyond loopback, or None."""
    if is_loopback(host):
        return None
    return (
        f"{what}: listening on {host}, reachable from the network, over plain HTTP: API "
        "keys and memories travel unencrypted. Serve it behind a TLS-terminating proxy "
        "(docs/operations/security.md)"
    )


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: any free port), bound before the server
    starts so that its real address can be announced; OSError naming the address if not."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    """``http://host:port`` of a bound socket (IPv6 hosts in brackets)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def announce(what: str, sock: socket.socket, detail: str) -> None:
    """The start-up line: where the server listens and what it serves (standard error)."""
    print(
        f"{what}: listening on {url_of(sock)} ({detail}); Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for receiving each whole request.

    The deadline starts when the connection opens and again when a response completes on a
    kept-alive connection; a request whose head and body have not fully arrived by then gets
    408 (or the connection is closed if a response already started).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout_s = request_timeout()
        self._deadline: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.timeout_s, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR):
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.conn.their_state is h11.IDLE and self.cycle is None:
            pass  # nothing of a request arrived: close quietly
        elif self.cycle is None or not self.cycle.response_started:
            try:
                body = b"request not received in time"
                self.transport.write(
                    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\n"
                    b"connection: close\r\ncontent-length: "
                    + str(len(body)).encode()
                    + b"\r\n\r\n"
                    + body
                )
            except Exception:  # the connection is being dropped either way
                pass
        if self.cycle is not None:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.transport.close()
