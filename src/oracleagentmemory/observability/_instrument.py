"""Wrap public methods so each call emits a started/completed event pair.

With no listener registered a wrapped call costs one context-variable read; events (and the
argument summaries they carry) are built only while a subscribed listener is registered.
Raw arguments travel in ``arguments`` (redacted by the events' dumps); vectors are replaced
by their shape unless a listener sets ``include_embedding_vectors``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import time
from collections.abc import Callable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar

from oracleagentmemory.observability._kinds import OperationKind
from oracleagentmemory.observability.eventlistener import (
    _LISTENERS,
    emit_event,
    listeners_for,
)

if TYPE_CHECKING:
    from oracleagentmemory.observability.event import (
        ApiOperationCompletedEvent,
        ApiOperationStartedEvent,
    )

C = TypeVar("C", bound=type)
_VECTOR_ARGUMENTS = frozenset({"embeddings", "embedding", "query_vector"})
_MAX_ITEMS = 50


def _wants_vectors() -> bool:
    return any(listener.include_embedding_vectors for listener in _LISTENERS.get())


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-ready data for an event: bytes and arrays become their size/shape,
    records their type and id; long sequences are cut to their first 50 items."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, bytes | bytearray | memoryview):
        return {"bytes": len(value)}
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return {"shape": list(value.shape), "dtype": str(value.dtype)}
    if depth > 4:
        return {"type": type(value).__name__}
    if isinstance(value, Mapping):
        return {str(key): plain(item, depth + 1) for key, item in list(value.items())[:_MAX_ITEMS]}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(item, depth + 1) for item in list(value)[:_MAX_ITEMS]]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {"type": type(value).__name__}
        for name in ("id", "record_type", "role"):
            if hasattr(value, name):
                out[name] = plain(getattr(value, name), depth + 1)
        return out
    return {"type": type(value).__name__}


def summary(value: Any) -> Any:
    """A content-free summary of an argument or result: counts, lengths and flags."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, str):
        return {"length": len(value)}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"bytes": len(value)}
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return {"shape": list(value.shape)}
    if isinstance(value, Mapping):
        return {"count": len(value)}
    if isinstance(value, list | tuple | set | frozenset):
        return {"count": len(value), "null_count": sum(item is None for item in value)}
    return {"type": type(value).__name__}


def _vectors(name: str, value: Any) -> Any:
    if name in _VECTOR_ARGUMENTS and value is not None and not _wants_vectors():
        return summary(value)
    return plain(value)


def _event_class(name: str) -> Any:
    """The event class ``name`` of ``observability.event`` (imported, with pydantic, only
    once a listener wants an event)."""
    from oracleagentmemory.observability import event

    return getattr(event, name)


def instrument(
    started: str,
    completed: str,
    methods: Mapping[str, OperationKind],
    context: Callable[[Any], dict[str, Any]] | None = None,
) -> Callable[[C], C]:
    """Class decorator: each listed public method emits ``started``/``completed`` events (the
    names of their classes in ``observability.event``).

    ``context`` adds fields common to both events (a thread's ids, for instance).
    """

    def decorate(cls: C) -> C:
        for name, kind in methods.items():
            setattr(cls, name, _wrap(getattr(cls, name), started, completed, kind, context))
        return cls

    return decorate


def _wrap(
    method: Callable[..., Any],
    started: str,
    completed: str,
    kind: OperationKind,
    context: Callable[[Any], dict[str, Any]] | None,
) -> Callable[..., Any]:
    signature = inspect.signature(method)
    name = method.__name__

    @functools.wraps(method)
    def observed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _LISTENERS.get():
            return method(self, *args, **kwargs)
        from oracleagentmemory.observability.event import new_event_id

        started_type: type[ApiOperationStartedEvent] = _event_class(started)
        completed_type: type[ApiOperationCompletedEvent] = _event_class(completed)
        wants_started = bool(listeners_for(started_type))
        wants_completed = bool(listeners_for(completed_type))
        if not (wants_started or wants_completed):
            return method(self, *args, **kwargs)
        component = started_type.model_fields["component"].default
        common: dict[str, Any] = {
            "concrete_class": type(self).__name__,
            "method": name,
            "operation_kind": kind,
            **(context(self) if context is not None else {}),
        }
        event_id = new_event_id()
        if wants_started:
            try:
                bound = signature.bind_partial(self, *args, **kwargs).arguments
            except TypeError:
                bound = {"args": args, "kwargs": kwargs}
            arguments = {k: _vectors(k, v) for k, v in bound.items() if k != "self"}
            emit_event(
                started_type(
                    event_id=f"{event_id}.started",
                    event_name=f"{component}.{name}.started",
                    arguments=arguments,
                    argument_summary={k: summary(v) for k, v in bound.items() if k != "self"},
                    **common,
                )
            )
        begin = time.perf_counter()
        try:
            result = method(self, *args, **kwargs)
        except BaseException as exc:
            if wants_completed:
                emit_event(
                    completed_type(
                        event_id=f"{event_id}.completed",
                        event_name=f"{component}.{name}.completed",
                        started_event_id=f"{event_id}.started",
                        success=False,
                        error_type=type(exc).__name__,
                        duration_ms=(time.perf_counter() - begin) * 1000,
                        **common,
                    )
                )
            raise
        if wants_completed:
            emit_event(
                completed_type(
                    event_id=f"{event_id}.completed",
                    event_name=f"{component}.{name}.completed",
                    started_event_id=f"{event_id}.started",
                    success=True,
                    result_summary={"result": summary(result)},
                    duration_ms=(time.perf_counter() - begin) * 1000,
                    **common,
                )
            )
        return result

    observed.__oam_observed__ = True  # type: ignore[attr-defined]
    return observed


def instrument_embedder(cls: C) -> C:
    """Class decorator: ``embed`` (and a native ``embed_async``) emit embedder events."""
    for name in ("embed", "embed_async"):
        method = cls.__dict__.get(name)
        if method is None:
            continue
        if inspect.iscoroutinefunction(method):
            setattr(cls, name, _wrap_embed_async(method))
        else:
            setattr(cls, name, _wrap_embed(method))
    return cls


def _embed_events(self: Any, texts: Any, is_query: bool) -> tuple[str, dict[str, Any]]:
    from oracleagentmemory.observability.event import EmbedderStartedEvent, new_event_id

    event_id = new_event_id()
    model = str(
        getattr(self, "model_identity", None) or getattr(self, "model", type(self).__name__)
    )
    common: dict[str, Any] = {
        "concrete_class": type(self).__name__,
        "model": str(model),
        "is_query": bool(is_query),
    }
    count = len(texts) if isinstance(texts, list) else 0
    if listeners_for(EmbedderStartedEvent):
        strings = [text for text in texts if isinstance(text, str)] if count else []
        emit_event(
            EmbedderStartedEvent(
                event_id=f"{event_id}.started",
                arguments={"texts": plain(texts), "is_query": bool(is_query)},
                argument_summary={"texts": summary(texts), "is_query": bool(is_query)},
                input=strings,
                input_count=count,
                text_lengths=[len(text) for text in strings],
                **common,
            )
        )
    return event_id, {**common, "input_count": count}


def _embed_completed(
    event_id: str, common: dict[str, Any], begin: float, vectors: Any, error: BaseException | None
) -> None:
    from oracleagentmemory.observability.event import EmbedderCompletedEvent

    if not listeners_for(EmbedderCompletedEvent):
        return
    shape = list(getattr(vectors, "shape", ())) if error is None else []
    fields: dict[str, Any] = {}
    if len(shape) == 2:
        fields = {"vector_count": shape[0], "embedding_dimension": shape[1]}
        if _wants_vectors():
            fields["embedding_vector"] = [[float(x) for x in row] for row in vectors]
    emit_event(
        EmbedderCompletedEvent(
            event_id=f"{event_id}.completed",
            started_event_id=f"{event_id}.started",
            success=error is None,
            error_type=None if error is None else type(error).__name__,
            result_summary={"input_count": common["input_count"], **fields} if shape else None,
            duration_ms=(time.perf_counter() - begin) * 1000,
            **fields,
            **common,
        )
    )


def _wrap_embed(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def observed(self: Any, texts: Any, *, is_query: bool = False) -> Any:
        if not _LISTENERS.get():
            return method(self, texts, is_query=is_query)
        event_id, common = _embed_events(self, texts, is_query)
        begin = time.perf_counter()
        try:
            vectors = method(self, texts, is_query=is_query)
        except BaseException as exc:
            _embed_completed(event_id, common, begin, None, exc)
            raise
        _embed_completed(event_id, common, begin, vectors, None)
        return vectors

    return observed


def _wrap_embed_async(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def observed(self: Any, texts: Any, *, is_query: bool = False) -> Any:
        if not _LISTENERS.get():
            return await method(self, texts, is_query=is_query)
        event_id, common = _embed_events(self, texts, is_query)
        begin = time.perf_counter()
        try:
            vectors = await method(self, texts, is_query=is_query)
        except BaseException as exc:
            _embed_completed(event_id, common, begin, None, exc)
            raise
        _embed_completed(event_id, common, begin, vectors, None)
        return vectors

    return observed
