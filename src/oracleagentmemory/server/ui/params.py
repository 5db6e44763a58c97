"""Query parameters of the ``/ui`` pages, read from the raw query string and checked here.

FastAPI's own validation would answer a bad value with JSON; a browser gets an HTML page
instead: every bad value is a 400 that names its parameter (``page: must be a whole number
from 1 to 200000, got '-1'``), and a page past the last one is a 404 that says where the
last one is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from starlette.datastructures import QueryParams

from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.core.store._limits import MAX_ID_CHARS
from oracleagentmemory.core.store._overview import MAX_OFFSET, STATUSES, check_day
from oracleagentmemory.server.errors import ApiError
from oracleagentmemory.server.ui.render import pages_of

PER_PAGE: Final = (10, 25, 50, 100, 200)
"""The page sizes offered (and accepted)."""
ORDERS: Final = ("newest", "oldest")
STRATEGIES: Final = ("vector", "keyword", "hybrid")
MAX_QUERY_CHARS: Final = 2000


def bad(name: str, why: str, raw: str) -> ApiError:
    shown = raw if len(raw) <= 60 else raw[:57] + "..."
    return ApiError(400, f"{name}: {why}, got {shown!r}")


def text(query: QueryParams, name: str, *, limit: int = MAX_ID_CHARS) -> str | None:
    """A text parameter (None when absent or blank); 400 when too long or not text."""
    raw = query.get(name)
    if raw is None or not raw.strip():
        return None
    raw = raw.strip()
    if len(raw) > limit:
        raise bad(name, f"must be at most {limit} characters", raw)
    if "\x00" in raw or any("\ud800" <= ch <= "\udfff" for ch in raw):
        raise bad(name, "must be plain text", raw)
    return raw


def number(query: QueryParams, name: str, default: int, low: int, high: int) -> int:
    raw = query.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip()
    if not value.isascii() or not value.isdigit() or not low <= int(value) <= high:
        raise bad(name, f"must be a whole number from {low} to {high}", raw)
    return int(value)


def choice(query: QueryParams, name: str, allowed: tuple[str, ...], default: str) -> str:
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    if raw not in allowed:
        raise bad(name, f"must be one of {', '.join(allowed)}", raw)
    return raw


def newest_first(query: QueryParams, default: str) -> bool:
    return choice(query, "order", ORDERS, default) == "newest"


def day(query: QueryParams, name: str) -> str | None:
    raw = text(query, name, limit=40)
    if raw is None:
        return None
    try:
        return check_day(raw, name)
    except ValueError:
        raise bad(name, "must be a day as YYYY-MM-DD", raw) from None


def memory_types(query: QueryParams) -> list[str]:
    """The ``type`` filter (repeatable; empty: every memory type)."""
    out = []
    for raw in query.getlist("type"):
        if raw == "":
            continue
        if raw not in MEMORY_RECORD_TYPES:
            raise bad("type", f"must be one of {', '.join(MEMORY_RECORD_TYPES)}", raw)
        out.append(raw)
    return list(dict.fromkeys(out))


def status(query: QueryParams) -> str | None:
    value = choice(query, "status", ("", *STATUSES), "")
    return value or None


@dataclass(frozen=True)
class Paging:
    """Which page of a list is asked for."""

    page: int
    per_page: int
    name: str = "page"

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    def check(self, total: int) -> None:
        """404 when the page lies past the last page of ``total`` items."""
        last = pages_of(total, self.per_page)
        if self.page > last:
            raise ApiError(
                404,
                f"{self.name}: page {self.page} is past the last page, {last} "
                f"({total} items, {self.per_page} a page)",
            )


def paging(
    query: QueryParams,
    *,
    default_per_page: int = 50,
    name: str = "page",
    size_name: str = "per_page",
) -> Paging:
    """The page number and size; 400 naming the parameter when out of range."""
    size = number(query, size_name, default_per_page, 1, max(PER_PAGE))
    if size not in PER_PAGE:
        raise bad(size_name, f"must be one of {', '.join(map(str, PER_PAGE))}", str(size))
    deepest = MAX_OFFSET // size + 1
    return Paging(number(query, name, 1, 1, deepest), size, name)
