"""How a LangGraph item is one memory record: ids, metadata, TTL anchors, index text.

Helpers of :mod:`oracleagentmemory.integrations.langgraph`; nothing here writes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from json.encoder import encode_basestring
from typing import Any, TypeAlias

from langgraph.store.base import InvalidNamespaceError
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from oracleagentmemory.apis.records import Record
from oracleagentmemory.core.store._limits import (
    MAX_CALLER_CHUNK_CHARS,
    MAX_ID_CHARS,
    MAX_JSON_BYTES,
    MAX_TTL_DAYS,
    CheckedJson,
    check_text,
    dumps_checked,
)

RECORD_TYPE = "memory"
"""The record type every LangGraph item is stored as."""
META = "langgraph"
"""Metadata key holding the item's namespace, key, times and TTL."""
VALUE = "value"
"""Metadata key holding a copy of the item's value (what ``filter`` matches)."""

UserIdFrom: TypeAlias = int | Callable[[tuple[str, ...]], str | None] | None
"""Where an item's ``user_id`` comes from: a namespace position, a callable, or nowhere."""

_LAST = datetime(9999, 12, 31, tzinfo=UTC)


def check_namespace(namespace: Any, name: str, *, for_write: bool = False) -> tuple[str, ...]:
    """LangGraph's label rules, with errors naming ``name``: a tuple of non-empty strings
    without ``.`` or NUL; a written namespace is non-empty and not rooted at ``langgraph``."""
    if not isinstance(namespace, tuple):
        raise TypeError(f"{name} must be a tuple of strings, got {type(namespace).__name__}")
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"{name}: label {label!r} in {namespace} is a {type(label).__name__}, "
                "labels must be strings"
            )
        if not label:
            raise InvalidNamespaceError(f"{name}: labels cannot be empty strings ({namespace})")
        if "." in label:
            raise InvalidNamespaceError(
                f"{name}: label {label!r} in {namespace} contains a period ('.')"
            )
        try:
            check_text(label, name)
        except ValueError as exc:
            raise InvalidNamespaceError(str(exc)) from None
    if for_write:
        if not namespace:
            raise InvalidNamespaceError(f"{name} cannot be empty")
        if namespace[0] == "langgraph":
            raise InvalidNamespaceError(f'{name}: the root label cannot be "langgraph"')
    return namespace


def check_key(key: Any) -> str:
    """An item key: a string without NUL or lone surrogates."""
    if not isinstance(key, str):
        raise TypeError(f"key must be a string, got {type(key).__name__}")
    return check_text(key, "key")


def memory_id(
    secret: bytes, user_id: str | None, agent_id: str | None, namespace: tuple[str, ...], key: str
) -> str:
    """The record id of (namespace, key) of ``user_id`` in the store of ``agent_id``. Keyed
    by the store's secret (``id_secret``), so no one who lacks it can compute an item's id
    and create a record there first."""
    raw = json.dumps([user_id, agent_id, list(namespace), key], ensure_ascii=False)
    return "langgraph-" + hmac.new(secret, raw.encode("utf-8"), hashlib.sha256).hexdigest()


def legacy_memory_id(agent_id: str | None, namespace: tuple[str, ...], key: str) -> str:
    """The id items had before ids were keyed (anyone can compute it): still read, and
    written in place, when the record there is the caller's own."""
    raw = json.dumps([agent_id, list(namespace), key], ensure_ascii=False)
    return "langgraph-" + hashlib.sha256(raw.encode("utf-8")).hexdigest()


_JSON = json.JSONEncoder(ensure_ascii=False).encode
"""``json.dumps(x, ensure_ascii=False)`` without building an encoder per call."""


def _json_text(text: str | None) -> str:
    """``json.dumps(text, ensure_ascii=False)`` of a string or None (the encoder's own
    string function: no encoder walk)."""
    return "null" if text is None else encode_basestring(text)


def _json_texts(texts: Sequence[str]) -> str:
    """``json.dumps(list(texts), ensure_ascii=False)`` of strings, its default separators."""
    return "[" + ", ".join(encode_basestring(t) for t in texts) + "]"


_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
"""The encoding of :func:`dumps_checked` (compact, UTF-8 kept, no NaN)."""


def id_hasher(secret: bytes) -> hmac.HMAC:
    """An HMAC-SHA256 keyed with the store's secret, for :func:`item_ids` to copy."""
    return hmac.new(secret, digestmod=hashlib.sha256)


def item_ids(
    hasher: hmac.HMAC,
    user_id: str | None,
    agent_id: str | None,
    namespace: tuple[str, ...],
    key: str,
) -> tuple[str, str]:
    """(:func:`memory_id`, :func:`legacy_memory_id`), the same ids at less cost: one JSON
    encoding (the keyed id's text is the legacy id's list with the user put first) and a
    copy of the keyed ``hasher`` (:func:`id_hasher`) instead of a new HMAC."""
    raw = f"[{_json_text(agent_id)}, {_json_texts(namespace)}, {_json_text(key)}]"
    mac = hasher.copy()
    mac.update(("[" + _json_text(user_id) + ", " + raw[1:]).encode("utf-8"))
    return (
        "langgraph-" + mac.hexdigest(),
        "langgraph-" + hashlib.sha256(raw.encode("utf-8")).hexdigest(),
    )


def user_of(user_id_from: UserIdFrom, namespace: tuple[str, ...]) -> str | None:
    """The ``user_id`` an item of ``namespace`` is scoped to."""
    if user_id_from is None:
        return None
    user: str | None
    if isinstance(user_id_from, int):
        try:
            user = namespace[user_id_from]
        except IndexError:
            return None
    else:
        user = user_id_from(namespace)
        if user is None:
            return None
        if not isinstance(user, str) or not user:
            raise TypeError(
                f"user_id_from returned {user!r} for {namespace}; it must return a "
                "non-empty string or None"
            )
    if len(user) > MAX_ID_CHARS:
        raise ValueError(
            f"namespace: the user id {user[:40]!r}... is {len(user)} characters long; "
            f"user ids have at most {MAX_ID_CHARS}"
        )
    return user


def user_of_prefix(user_id_from: UserIdFrom, prefix: Sequence[str]) -> str | None:
    """The user a namespace prefix pins down (a non-negative position inside it that is
    not a wildcard), else None: the search then spans every user."""
    if isinstance(user_id_from, int) and 0 <= user_id_from < len(prefix):
        label = prefix[user_id_from]
        if label != "*" and len(label) <= MAX_ID_CHARS:
            return label
    return None


def label_positions(path: Sequence[str], *, from_end: bool = False) -> dict[str, str]:
    """``{"0": label, ...}`` for the labels of ``path`` that are not wildcards."""
    labels = list(reversed(path)) if from_end else list(path)
    return {str(i): label for i, label in enumerate(labels) if label != "*"}


# --------------------------------------------------------------------------- values, TTL


def check_value(value: Any) -> tuple[dict[str, Any], str]:
    """The value as a dict and its exact JSON text (what the record's content holds),
    its depth checked at the level it sits in the item's metadata (one below the top)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"value must be a mapping (dict) or None, got {type(value).__name__}")
    as_dict = dict(value)
    return as_dict, dumps_checked(as_dict, "value", depth=1)


def metadata_may_be_too_large(
    namespace: tuple[str, ...], key: str, content: str, extra: int = 64
) -> bool:
    """Whether the metadata of an item whose value's JSON is ``content`` could reach the
    JSON size limit (then :func:`item_metadata` must measure it). A bound, never below the
    real size: UTF-8 takes at most 4 bytes a character and a JSON escape at most 6; the
    labels appear three times (namespace, prefix, suffix); ``extra``: the times, the TTL and
    the index signature written beside them."""
    labels = len(key) + 3 * sum(len(label) + 8 for label in namespace)
    return 4 * len(content) + 6 * labels + extra + 1024 >= MAX_JSON_BYTES


def check_ttl(ttl: Any) -> float | None:
    """A TTL in minutes: a positive finite number (None: never expires)."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise TypeError(f"ttl must be a number of minutes or None, got {type(ttl).__name__}")
    if not math.isfinite(ttl) or ttl <= 0:
        raise ValueError(f"ttl must be a positive number of minutes, got {ttl!r}")
    if ttl > MAX_TTL_DAYS * 1440:
        raise ValueError(f"ttl must be at most {MAX_TTL_DAYS * 1440} minutes, got {ttl!r}")
    return float(ttl)


@dataclass(frozen=True, slots=True)
class Expiry:
    """How a record expires: ``ttl_days`` counted from ``timestamp`` (``anchored``) or, for
    an item without TTL, the client's default retention from creation."""

    timestamp: str | None
    ttl_days: int | None
    anchored: bool


def expiry_for(ttl_minutes: float | None, max_ttl_days: int | None, now: datetime) -> Expiry:
    """The record fields that make it expire ``ttl_minutes`` after ``now``.

    The store counts whole days from an anchor, so the anchor is the record's timestamp,
    set to ``now + ttl - days``: the expiry lands on the second asked for. The client's
    ``max_ttl_days`` still caps it.
    """
    if ttl_minutes is None:
        return Expiry(None, None, False)
    if max_ttl_days is not None and ttl_minutes > max_ttl_days * 1440:
        warnings.warn(
            f"ttl={ttl_minutes} minutes exceeds the client's max_ttl_days={max_ttl_days}; "
            "clamped to it",
            UserWarning,
            stacklevel=5,
        )
        ttl_minutes = float(max_ttl_days * 1440)
    days = max(1, math.ceil(ttl_minutes / 1440))
    try:
        end = now + timedelta(minutes=ttl_minutes)
    except OverflowError:
        end = _LAST
    if end >= _LAST:
        raise ValueError(f"ttl={ttl_minutes} minutes ends after year 9999; give a shorter ttl")
    return Expiry((end - timedelta(days=days)).isoformat(), days, True)


# --------------------------------------------------------------------------- index text


def index_paths(fields: Sequence[str]) -> list[tuple[str, str | list[str]]]:
    """Each field with its tokenized path (``"$"`` stays whole), as LangGraph tokenizes."""
    return [(f, f if f == "$" else tokenize_path(f)) for f in fields]


def check_fields(fields: Any, name: str) -> list[str]:
    """A non-empty list of non-empty path strings."""
    if not isinstance(fields, list | tuple) or not fields:
        raise TypeError(f"{name} must be a non-empty list of field paths")
    for f in fields:
        if not isinstance(f, str) or not f:
            raise TypeError(f"{name} must hold non-empty strings, got {f!r}")
    return list(fields)


def _plain_field(path: str | list[str]) -> str | None:
    """The field name of a tokenized path that is one plain field, else None."""
    if not isinstance(path, list) or len(path) != 1:
        return None
    token = path[0]
    if token == "*" or token[:1] + token[-1:] in ("[]", "{}"):
        return None
    return token


def index_texts(value: dict[str, Any], paths: Sequence[tuple[str, str | list[str]]]) -> list[str]:
    """The texts of ``value`` at ``paths`` (one retrieval row each; long ones split)."""
    out: list[str] = []
    for _, path in paths:
        # One plain field holding a string (the usual ``fields``): its text, as
        # ``get_text_at_path`` gives it, without walking the path.
        field = _plain_field(path)
        found = None if field is None else value.get(field)
        texts = [found] if type(found) is str else get_text_at_path(value, path)
        for text in texts:
            if not text.strip():
                continue
            out.extend(
                text[i : i + MAX_CALLER_CHUNK_CHARS]
                for i in range(0, len(text), MAX_CALLER_CHUNK_CHARS)
            )
    return out


def index_signature(texts: Sequence[str]) -> str:
    """A digest of an item's index texts (an unchanged value is not embedded again)."""
    return hashlib.sha256(_json_texts(texts).encode()).hexdigest()


# --------------------------------------------------------------------------- metadata


def _info(
    namespace: tuple[str, ...],
    key: str,
    *,
    created_at: str,
    updated_at: str,
    ttl_minutes: float | None,
    signature: str | None,
) -> dict[str, Any]:
    return {
        "namespace": list(namespace),
        "key": key,
        "prefix": label_positions(namespace),
        "suffix": label_positions(namespace, from_end=True),
        "created_at": created_at,
        "updated_at": updated_at,
        "ttl_minutes": ttl_minutes,
        "index_signature": signature,
    }


def item_metadata(
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    *,
    created_at: str,
    updated_at: str,
    ttl_minutes: float | None,
    signature: str | None,
) -> CheckedJson:
    """The record's metadata: where the item lives, its times and TTL, and its value;
    checked whole (depth and size, with the wrapper counted), its JSON text kept."""
    info = _info(
        namespace,
        key,
        created_at=created_at,
        updated_at=updated_at,
        ttl_minutes=ttl_minutes,
        signature=signature,
    )
    meta = {META: info, VALUE: value}
    return CheckedJson(meta, dumps_checked(meta, "value"))


def checked_item_metadata(
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    content: str,
    *,
    created_at: str,
    updated_at: str,
    ttl_minutes: float | None,
    signature: str | None,
) -> CheckedJson:
    """:func:`item_metadata` of a value already checked: ``content`` is its text from
    :func:`check_value`, the labels and key passed :func:`check_namespace` and
    :func:`check_key`, ``ttl_minutes`` :func:`check_ttl`, the times and signature are ASCII.
    The same JSON text, without walking the value again; measured whole only when its size
    could reach the limit."""
    extra = len(created_at) + len(updated_at) + len(signature or "") + 64
    if metadata_may_be_too_large(namespace, key, content, extra):
        return item_metadata(
            namespace,
            key,
            value,
            created_at=created_at,
            updated_at=updated_at,
            ttl_minutes=ttl_minutes,
            signature=signature,
        )
    info = _info(
        namespace,
        key,
        created_at=created_at,
        updated_at=updated_at,
        ttl_minutes=ttl_minutes,
        signature=signature,
    )
    text = _COMPACT(info)
    return CheckedJson({META: info, VALUE: value}, f'{{"{META}":{text},"{VALUE}":{content}}}')


@dataclass(frozen=True, slots=True)
class Decoded:
    """A stored item read back from its record."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    ttl_minutes: float | None
    signature: str | None
    content: str


def decode(record: Record) -> Decoded | None:
    """The item a record holds, or None for a record this adapter did not write."""
    meta = record.metadata
    if not isinstance(meta, dict) or not isinstance(record.content, str):
        return None
    info = meta.get(META)
    if not isinstance(info, dict):
        return None
    try:
        value = json.loads(record.content)
        namespace = tuple(info["namespace"])
        key = info["key"]
        created = datetime.fromisoformat(info["created_at"])
        updated = datetime.fromisoformat(info["updated_at"])
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(value, dict) or not isinstance(key, str):
        return None
    ttl = info.get("ttl_minutes")
    return Decoded(
        namespace,
        key,
        value,
        created,
        updated,
        float(ttl) if isinstance(ttl, int | float) else None,
        info.get("index_signature"),
        record.content,
    )
