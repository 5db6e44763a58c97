"""The context card as the ``/ui`` renders it (``server.ui.card``): a real card's sections
become HTML with linked records, hostile text in any part stays text, and a card that does
not nest is shown escaped rather than guessed at."""

from __future__ import annotations

from html import escape

import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from oracleagentmemory.apis.message import Message
from oracleagentmemory.apis.records import RecordStatus, build_record
from oracleagentmemory.core.contextcard import OracleContextCard
from oracleagentmemory.core.searchresult import (
    OracleSearchResult,
    OracleSearchResultFormatConfig,
)
from oracleagentmemory.server.ui.card import MAX_DEPTH, parse_card, render_card

HOSTILE = '<script>alert(1)</script></content></fact><img src=x onerror=alert(2)> & "q"'


def _result(rtype: str, rid: str, content: str, **config: bool) -> OracleSearchResult:
    record = build_record(
        rtype,
        rid,
        content=content,
        thread_id="t<1>",
        user_id="u1",
        timestamp="2024-05-01T10:00:00",
        metadata={"k": "<v>"},
        status=RecordStatus.VALID,
    )
    return OracleSearchResult(0.25, record, format_config=OracleSearchResultFormatConfig(**config))


def _card() -> OracleContextCard:
    return OracleContextCard(
        summary=f"The user said: {HOSTILE}\nand more.",
        topics=["travel", HOSTILE],
        relevant_results=[
            _result("fact", "m-1", "Likes tea."),
            _result(
                "preference",
                'p"><b>2',
                HOSTILE,
                show_thread_id=True,
                show_metadata=True,
                show_distance=True,
            ),
            _result("user_profile", "u1", "A traveller."),
        ],
        recent_messages=[Message(role="user", content=HOSTILE, timestamp="2024-05-01T10:00:00")],
    )


def test_a_real_card_renders_as_sections_with_linked_records() -> None:
    html = render_card(_card().content)
    for section in ("topics", "summary", "relevant_information", "recent_messages"):
        assert f'id="card-{section}"' in html
    assert "<h3>Relevant information (3)</h3>" in html and "<h3>Recent messages (1)</h3>" in html
    assert '<a href="/ui/memories/m-1">m-1</a>' in html
    assert 'href="/ui/memories/p%22%3E%3Cb%3E2"' in html  # an odd id, encoded and escaped
    assert '<a href="/ui/users/u1">u1</a>' in html  # a profile links its user
    assert 'href="/ui/threads/t%3C1%3E"' in html  # show_thread_id: the thread is linked
    assert "relevance 0.75" in html and "2024-05-01 10:00" in html
    assert "<span>travel</span>" in html


def test_hostile_text_in_every_part_stays_text() -> None:
    text = _card().content
    html = render_card(text)
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "</content></fact>" not in html
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/content&gt;&lt;/fact&gt;"
    assert html.count(escaped) == 4  # summary, topic, result, message
    tree = parse_card(text)
    assert tree is not None
    (root,) = tree.elements
    assert [s.tag for s in root.elements] == [
        "topics",
        "summary",
        "relevant_information",
        "recent_messages",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "<context_card><summary>unclosed</context_card>",
        "<context_card><summary>x</summary>",
        "</summary>stray close",
        "<a>" * (MAX_DEPTH + 2) + "deep" + "</a>" * (MAX_DEPTH + 2),
    ],
)
def test_a_card_that_does_not_nest_is_shown_escaped(text: str) -> None:
    assert parse_card(text) is None
    html = render_card(text)
    assert html.startswith('<pre id="card"') and html.endswith(f">{escape(text)}</pre>")


def test_an_empty_card_says_so_and_bare_text_is_kept() -> None:
    assert "empty" in render_card("")
    html = render_card("just <i>text</i> & more")
    assert "<i>" not in html and "just" in html and "&amp; more" in html
