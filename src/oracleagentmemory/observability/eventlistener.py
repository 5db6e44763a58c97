"""Public listener registration helpers for observability events.

Registration is context-local (a ``contextvars`` variable), so it follows the caller into
``asyncio`` tasks and into the worker threads the SDK's ``*_async`` methods run on, and two
concurrent requests of a server see only their own listeners.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from oracleagentmemory._lazy import lazy_exports

if TYPE_CHECKING:
    from oracleagentmemory.observability.event import Event
else:  # the events (pydantic models) load when a listener is built or ``Event`` is read
    __getattr__, __dir__ = lazy_exports(
        __name__, {"oracleagentmemory.observability.event": ("Event",)}, globals()
    )

log = logging.getLogger("oracleagentmemory.observability")

_ListenerT = TypeVar("_ListenerT", bound="Event")

_LISTENERS: contextvars.ContextVar[tuple[EventListener, ...]] = contextvars.ContextVar(
    "oracleagentmemory_event_listeners", default=()
)


class EventListener(ABC):
    """Base class for synchronous observability event listeners.

    Implement :meth:`on_event`; override :meth:`subscribed_event_types` to receive only some
    event classes (``None``, the default, receives everything). Set
    ``include_embedding_vectors = True`` on a listener to have embedder events carry the raw
    vectors (they are left out otherwise).
    """

    include_embedding_vectors: bool = False

    @abstractmethod
    def on_event(self, event: Event) -> None:
        """Handle one event (exceptions are logged and never reach the SDK call)."""

    def subscribed_event_types(self) -> Sequence[type[Event]] | None:
        """Event classes this listener receives; ``None`` for all of them."""
        return None


class GenericEventListener(EventListener):
    """Deliver only events of ``event_type`` (and its subclasses) to ``callback``."""

    def __init__(
        self, event_type: type[_ListenerT], callback: Callable[[_ListenerT], None]
    ) -> None:
        from oracleagentmemory.observability.event import Event

        if not (isinstance(event_type, type) and issubclass(event_type, Event)):
            raise TypeError("event_type must be an Event subclass")
        if not callable(callback):
            raise TypeError("callback must be callable")
        self._event_type: type[Event] = event_type
        self._callback: Callable[[Any], None] = callback

    def on_event(self, event: Event) -> None:
        """Call the callback when ``event`` is an instance of ``event_type``."""
        if isinstance(event, self._event_type):
            self._callback(event)

    def subscribed_event_types(self) -> Sequence[type[Event]] | None:
        """The one event type this listener was built for."""
        return (self._event_type,)


def active_listeners() -> tuple[EventListener, ...]:
    """The listeners registered in the current context (empty when none)."""
    return _LISTENERS.get()


def listeners_for(event_type: type[Event]) -> tuple[EventListener, ...]:
    """The registered listeners subscribed to ``event_type``."""
    return tuple(
        listener
        for listener in _LISTENERS.get()
        if (types := listener.subscribed_event_types()) is None
        or any(issubclass(event_type, wanted) for wanted in types)
    )


def emit_event(event: Event) -> None:
    """Synchronously dispatch one event to the registered listeners, in registration order.

    A listener that raises is logged (warning) and skipped; dispatch goes on and the SDK call
    is never affected.
    """
    for listener in listeners_for(type(event)):
        try:
            listener.on_event(event)
        except Exception:
            log.warning("an event listener failed on %s", event.event_name)
            log.debug("listener failure", exc_info=True)


@contextlib.contextmanager
def register_event_listeners(listeners: list[EventListener]) -> Iterator[list[EventListener]]:
    """Register listeners for the current execution context; yields the active listeners.

    Nested registrations add to the current ones and are removed when their context exits.
    SDK events are built only while a listener subscribed to them is registered.
    """
    if not isinstance(listeners, list | tuple):
        raise TypeError("listeners must be a list of EventListener")
    for listener in listeners:
        if not isinstance(listener, EventListener):
            raise TypeError(f"listeners must contain EventListener, got {type(listener).__name__}")
    token = _LISTENERS.set(_LISTENERS.get() + tuple(listeners))
    try:
        yield list(_LISTENERS.get())
    finally:
        _LISTENERS.reset(token)
