"""Calendar dates named in a search query, and whether a record's timestamp falls near them.

"What did I cook on 13 October 2023?", "Where did we go in June?", "What happened in 2022?":
a query that names a day, a month or a year refers to a period, and a message written in that
period (its ``timestamp``, or creation time) is more likely to be the one meant. Only explicit
calendar dates in English are recognised (day month year in either order, month year, a month
alone, a year alone); relative ones ("last week") are not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<m>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<d>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<y>(?:19|20)\d\d)"
_PATTERNS = [
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I),  # 13 October, 2023
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I),  # October 13, 2023
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b(?!\s*,?\s*\d)", re.I),  # 13 October
    re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?!\s*,?\s*\d)", re.I),  # October 13
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.I),  # October 2023
    re.compile(rf"\b{_MONTH}\b", re.I),  # October
    re.compile(rf"\b{_YEAR}\b"),  # 2023
]
_NAMES_ONE = re.compile(rf"\b(?:{'|'.join(_MONTHS)})\b|\b(?:19|20)\d\d\b", re.I)
"""Every pattern's match holds a month name or a year as a whole word: a query without one
names no period (most queries: the patterns are not run)."""
_WORD = re.compile(r"\w+")
_YEAR_STARTS = ("19", "20")
_MODAL_MAY = re.compile(r"\bmay\s+(?:i|we|you|he|she|they|it|be|have|not)\b", re.I)


@dataclass(frozen=True)
class Period:
    """A named calendar period; a field left None matches any value (a month with no year)."""

    year: int | None
    month: int | None
    day: int | None

    def contains(self, when: datetime, slack_days: int) -> bool:
        """Whether ``when`` falls in the period or at most ``slack_days`` after it (people
        talk about a day, a month or a year a little after it)."""
        naive = when.replace(tzinfo=None)
        if self.year is not None:
            if self.month is None:
                start, end = datetime(self.year, 1, 1), datetime(self.year + 1, 1, 1)
            elif self.day is None:
                start = datetime(self.year, self.month, 1)
                end = datetime(self.year + (self.month == 12), self.month % 12 + 1, 1)
            else:
                try:
                    start = datetime(self.year, self.month, self.day)
                except ValueError:  # 31 February
                    return False
                end = start + timedelta(days=1)
            return start <= naive < end + timedelta(days=slack_days)
        # No year: the same month (and day) of any year, in that span or shortly after it.
        return any(
            (self.month is None or t.month == self.month)
            and (self.day is None or t.day == self.day)
            for t in (naive - timedelta(days=d) for d in range(slack_days + 1))
        )


def query_periods(query: str) -> list[Period]:
    """The calendar periods a query names, most specific match first for each span of text."""
    if not names_one(query):
        return []
    return scan_periods(query)


def names_one(query: str) -> bool:
    """Whether ``_NAMES_ONE`` finds a month name or a year in ``query``: in ASCII text, a
    word (a maximal run of word characters, as ``\\b`` delimits) that is one, looked up
    (half the expression's time); other text, by the expression."""
    if not query.isascii():
        return _NAMES_ONE.search(query) is not None
    for word in _WORD.findall(query.lower()):
        if word in _MONTHS or (len(word) == 4 and word[:2] in _YEAR_STARTS and word[2:].isdigit()):
            return True
    return False


def scan_periods(query: str) -> list[Period]:
    """:func:`query_periods` by running every pattern (no first look for a month or year)."""
    text = _MODAL_MAY.sub(" ", query)
    taken: list[tuple[int, int]] = []
    out: list[Period] = []
    for pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            groups = m.groupdict()
            month = _MONTHS[groups["m"].lower()] if groups.get("m") else None
            if month == 5 and groups["m"] == "may" and not groups.get("d"):
                continue  # lower-case "may" alone is the verb
            day = int(groups["d"]) if groups.get("d") else None
            if day is not None and not 1 <= day <= 31:
                continue
            year = int(groups["y"]) if groups.get("y") else None
            taken.append((m.start(), m.end()))
            out.append(Period(year, month, day))
    return out


def in_any_of(periods: list[Period], slack_days: int) -> Callable[[datetime | None], bool]:
    """``in_any`` for many record times: a period with a year has its bounds worked out
    once (the same comparisons as ``Period.contains``)."""
    slack = timedelta(days=slack_days)
    spans: list[tuple[datetime, datetime]] = []
    others: list[Period] = []
    for p in periods:
        if p.year is None:
            others.append(p)
        elif p.month is None:
            spans.append((datetime(p.year, 1, 1), datetime(p.year + 1, 1, 1) + slack))
        elif p.day is None:
            end = datetime(p.year + (p.month == 12), p.month % 12 + 1, 1)
            spans.append((datetime(p.year, p.month, 1), end + slack))
        else:
            try:
                start = datetime(p.year, p.month, p.day)
            except ValueError:  # 31 February: contains nothing
                continue
            spans.append((start, start + timedelta(days=1) + slack))

    def test(when: datetime | None) -> bool:
        if when is None:
            return False
        naive = when.replace(tzinfo=None)
        return any(start <= naive < end for start, end in spans) or any(
            p.contains(when, slack_days) for p in others
        )

    return test


def in_any(when: datetime | None, periods: list[Period], slack_days: int) -> bool:
    """Whether a record time falls in (or shortly after) any of ``periods``."""
    return when is not None and any(p.contains(when, slack_days) for p in periods)
