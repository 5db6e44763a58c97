"""HYBRID search prefers records from the calendar period a query names."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from oracleagentmemory.core import SearchStrategy
from oracleagentmemory.core.store._dates import Period, query_periods
from oracleagentmemory.core.store.search._fusion import RANK, SCORE, boost, fuse, rescore
from oracleagentmemory.core.store.search._hybrid import DATE_BOOST, hybrid_rank


@pytest.mark.parametrize(
    ("query", "periods"),
    [
        ("What did Gina find on 1 February, 2023?", [Period(2023, 2, 1)]),
        ("What painting on October 13, 2023?", [Period(2023, 10, 13)]),
        ("What did we paint in July 2023?", [Period(2023, 7, None)]),
        ("When did Melanie go camping in June?", [Period(None, 6, None)]),
        ("How many times in 2023?", [Period(2023, None, None)]),
        ("What happened on the 3rd of May?", [Period(None, 5, 3)]),
        ("Between March 2022 and 2024", [Period(2022, 3, None), Period(2024, None, None)]),
        ("May I ask what you cooked?", []),
        ("what may happen next", []),
        ("the 45 October report", [Period(None, 10, None)]),
        ("no dates here at all", []),
    ],
)
def test_query_periods(query: str, periods: list[Period]) -> None:
    assert sorted(query_periods(query), key=repr) == sorted(periods, key=repr)


def test_period_contains_with_slack() -> None:
    day = Period(2023, 10, 13)
    assert day.contains(datetime(2023, 10, 13, 18), 0)
    assert not day.contains(datetime(2023, 10, 14, 9), 0)
    assert day.contains(datetime(2023, 10, 20), 7)
    assert not day.contains(datetime(2023, 10, 12), 7)  # before the period: never
    june = Period(None, 6, None)
    assert june.contains(datetime(2021, 6, 30), 0)
    assert june.contains(datetime(2021, 7, 5), 7) and not june.contains(datetime(2021, 7, 9), 7)
    assert Period(2023, 12, None).contains(datetime(2024, 1, 3), 7)
    assert not Period(2023, 2, 31).contains(datetime(2023, 3, 3), 7)  # no such day


def test_fuse_kinds_and_rescore() -> None:
    a = [(1, 0.9), (2, 0.5), (3, 0.1)]
    b = [(3, 10.0), (4, 5.0)]
    by_score = dict(fuse([(a, 0.5), (b, 0.5)], 10, SCORE))
    assert by_score == pytest.approx({1: 0.5, 2: 0.25, 3: 0.5, 4: 0.0})
    by_rank = dict(fuse([(a, 1.0), (b, 1.0)], 10, RANK, rrf_k=60))
    assert by_rank[3] == pytest.approx(1 / 63 + 1 / 61)
    with pytest.raises(ValueError, match="kind"):
        fuse([(a, 1.0)], 3, "bogus")
    blended = rescore([(1, 0.9), (2, 0.5)], {1: 0.0, 2: 1.0}, 0.75)
    assert [rid for rid, _ in blended] == [2, 1]
    assert boost([(1, 0.5), (2, 0.4)], {2}, 0.3) == [(2, pytest.approx(0.7)), (1, 0.5)]


def test_hybrid_rank_boosts_candidates_in_the_named_period() -> None:
    vector = [(1, 0.10), (2, 0.11), (3, 0.5)]
    keyword = [(1, 0.2), (2, 0.2001), (3, 0.5)]
    times = {1: "2023-03-02T10:00:00", 2: "2023-05-08T13:56:00", 3: None}
    # keyword_span=0: the keyword scores' own spread (the span is tested in test_hybrid_span).
    plain = hybrid_rank(vector, keyword, 3, "what did I cook", times.get, keyword_span=0.0)
    assert [rid for rid, _ in plain] == [1, 2, 3]
    dated = hybrid_rank(
        vector, keyword, 3, "what did I cook in May 2023", lambda rids: times, keyword_span=0.0
    )
    assert [rid for rid, _ in dated] == [2, 1, 3]
    assert all(0.0 <= d <= 1.0 for _, d in dated)
    fused_2 = 1 - plain[1][1]
    assert dated[0][1] == pytest.approx(1 - (fused_2 + DATE_BOOST) / (1 + DATE_BOOST))
    assert dated[1][1] == pytest.approx(1 - 1 / (1 + DATE_BOOST))


def test_a_search_prefers_messages_from_the_named_day(make_client: Any) -> None:
    client = make_client(search_strategy=SearchStrategy.HYBRID)
    for i, (text, ts) in enumerate(
        [
            ("We baked bread today.", "2023-03-02T10:00:00"),
            ("We baked bread again.", "2023-05-08T10:00:00"),
            ("The weather was fine.", "2023-05-08T11:00:00"),
        ]
    ):
        thread = client.create_thread(thread_id=f"t{i}", user_id="u", agent_id="a")
        thread.add_messages([{"role": "user", "content": text, "timestamp": ts}])

    def first(query: str) -> str:
        return str(client.search(query, user_id="u", record_types=["message"])[0].content)

    assert first("baked bread on 8 May 2023") == "We baked bread again."
    assert first("baked bread on 2 March 2023") == "We baked bread today."
    assert first("baked bread in March") == "We baked bread today."


def test_a_query_without_a_month_or_year_names_no_period() -> None:
    """``query_periods`` looks for a month name or a year before running its patterns: it
    must answer as running them all, on text made of the words the patterns care about."""
    import random

    from oracleagentmemory.core.store._dates import query_periods, scan_periods

    words = "May may I 13 13th 3rd Oct. october, 2023 1999 in of Sept dec December x2023"
    words += " 2023x 31st , jan. we be mayday octopus 20233 march. the"
    pieces = words.split()
    rng = random.Random(4)
    for _ in range(20000):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 7)))
        assert query_periods(text) == scan_periods(text), text


def test_the_month_or_year_lookup_answers_as_the_expression() -> None:
    """``names_one`` (a word lookup in ASCII text) finds a month name or a year exactly
    where the expression ``_NAMES_ONE`` does: joined by punctuation, underscores and
    digits, in any case, and in text that is not ASCII (the expression answers there)."""
    import random

    from oracleagentmemory.core.store._dates import _NAMES_ONE, names_one

    pieces = [
        "MAY",
        "may",
        "Jan",
        "jan.",
        "SEPT",
        "sept",
        "sep",
        "2023",
        "1999",
        "2100",
        "19",
        "20",
        "023",
        "x",
        "mayo",
        "octopus",
    ]
    pieces += ["_", "-", ".", ",", "'", " ", "  ", "\n", "0", "_may", "dec_", "ſep", "İ", "é"]
    rng = random.Random(8)
    for _ in range(30000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        assert names_one(text) == (_NAMES_ONE.search(text) is not None), repr(text)


def test_periods_worked_out_once_answer_as_each_period() -> None:
    """``in_any_of`` (a period's bounds worked out once) answers as ``in_any`` for record
    times on and around the bounds, with and without a time zone, none, 31 February."""
    import random
    from datetime import timedelta, timezone

    from oracleagentmemory.core.store._dates import in_any, in_any_of

    rng = random.Random(3)
    for _ in range(400):
        periods = [
            Period(
                rng.choice([None, 2022, 2023]),
                rng.choice([None, 1, 2, 5, 12]),
                rng.choice([None, 1, 15, 28, 29, 31]),
            )
            for _ in range(rng.randint(1, 3))
        ]
        periods = [p for p in periods if p.year is not None or p.month is not None]
        slack = rng.choice([0, 7])
        test = in_any_of(periods, slack)
        assert test(None) is False
        for _ in range(40):
            when = datetime(2021, 12, 20) + timedelta(
                days=rng.randint(0, 800), hours=rng.choice([0, 23]), seconds=rng.choice([0, 59])
            )
            if rng.random() < 0.3:
                when = when.replace(tzinfo=timezone(timedelta(hours=rng.choice([-5, 2]))))
            assert test(when) == in_any(when, periods, slack), (periods, when, slack)
