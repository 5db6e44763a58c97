"""A thread's context card as readable HTML.

The card is XML-like text made for prompts (``core.contextcard``): sections (topics,
summary, relevant information, recent messages) holding elements whose text is escaped
(``&``, ``<``, ``>``). :func:`parse_card` reads it with a small tokenizer, not an XML
parser: only ``<name>`` and ``</name>`` are tags, everything else is text, so a card can
hold no entity, attribute, comment or processing instruction that does anything. A card
that does not nest properly (or nests deeper than :data:`MAX_DEPTH`) is shown as escaped
text instead. :func:`render_card` turns the tree into HTML in which every tag name and text
goes through :func:`~oracleagentmemory.server.ui.render.esc`; nothing of the card is ever
copied into the page unescaped.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Final

from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.server.ui.render import (
    esc,
    memory_link,
    tag,
    thread_link,
    user_link,
    when,
)

MAX_DEPTH: Final = 24
_TAG = re.compile(r"<(/?)([A-Za-z_][A-Za-z0-9_.\-]{0,63})>")
_SECTIONS: Final = {
    "topics": "Topics",
    "summary": "Summary",
    "relevant_information": "Relevant information",
    "recent_messages": "Recent messages",
}
_HEAD_FIELDS: Final = ("record_id", "status", "timestamp", "role", "estimated_relevance")


@dataclass
class Element:
    """One element of the card: its tag and its children (elements and text, in order)."""

    tag: str
    children: list[Element | str] = field(default_factory=list)

    @property
    def elements(self) -> list[Element]:
        return [c for c in self.children if isinstance(c, Element)]

    @property
    def text(self) -> str:
        return "\n".join(c for c in self.children if isinstance(c, str))

    def field(self, name: str) -> str | None:
        """The text of the first child element ``name`` that holds only text."""
        for c in self.elements:
            if c.tag == name and not c.elements:
                return c.text
        return None


def _unescape(text: str) -> str:
    """The card's escaping undone (the reverse of ``escape_xml_text``)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _text(chunk: str) -> str | None:
    """A run of text between tags, without the card's indentation (None when blank)."""
    if not chunk.strip():
        return None
    lines = chunk.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return _unescape(textwrap.dedent("\n".join(lines)).strip())


def parse_card(text: str) -> Element | None:
    """The card's element tree under a ``#root`` element; None when it does not nest."""
    root = Element("#root")
    stack = [root]
    pos = 0
    for m in _TAG.finditer(text):
        chunk = _text(text[pos : m.start()])
        if chunk is not None:
            stack[-1].children.append(chunk)
        pos = m.end()
        closing, name = m.group(1), m.group(2)
        if closing:
            if len(stack) == 1 or stack[-1].tag != name:
                return None
            stack.pop()
        else:
            if len(stack) > MAX_DEPTH:
                return None
            child = Element(name)
            stack[-1].children.append(child)
            stack.append(child)
    chunk = _text(text[pos:])
    if chunk is not None:
        stack[-1].children.append(chunk)
    return root if len(stack) == 1 else None


def render_card(text: str) -> str:
    """The card as HTML (``id="card"``): sections with headings, results and messages as
    items with their type, status, time and links, the rest as labelled values."""
    if not text.strip():
        return (
            '<p class="muted" id="card">The context card is empty: the thread has no '
            "messages yet.</p>"
        )
    tree = parse_card(text)
    if tree is None:
        return f'<pre id="card" class="text">{esc(text)}</pre>'
    parts = []
    for top in tree.children:
        if isinstance(top, Element) and top.tag == "context_card":
            parts += [_section(s) if isinstance(s, Element) else _plain(s) for s in top.children]
        else:
            parts.append(_value(top))
    return f'<div class="cardview" id="card">{"".join(parts)}</div>'


def _plain(text: str) -> str:
    return f'<div class="text">{esc(text)}</div>'


def _section(el: Element) -> str:
    title = _SECTIONS.get(el.tag, el.tag.replace("_", " ").capitalize())
    sid = f' id="card-{esc(el.tag)}"'
    if not el.children:
        return f'<section{sid}><h3>{esc(title)}</h3><p class="muted small">none</p></section>'
    if el.tag == "topics":
        chips = "".join(f"<span>{esc(t.text)}</span>" for t in el.elements)
        return f'<section{sid}><h3>{esc(title)}</h3><div class="chips">{chips}</div></section>'
    if el.tag in ("relevant_information", "recent_messages"):
        items = [_item(c) if isinstance(c, Element) else _plain(c) for c in el.children]
        return f"<section{sid}><h3>{esc(title)} ({len(items)})</h3>{''.join(items)}</section>"
    return f"<section{sid}><h3>{esc(title)}</h3>{''.join(map(_value, el.children))}</section>"


def _item(el: Element) -> str:
    """One relevant record or recent message: a head line (type, status, id, time, role),
    its content, then whatever else it holds."""
    kind = el.tag
    head = [tag(kind)]
    rid = el.field("record_id")
    status = el.field("status")
    if status and status != "valid":
        head.append(tag(status, "invalid"))
    role = el.field("role")
    if role:
        head.append(tag(role))
    if rid:
        if kind in MEMORY_RECORD_TYPES:
            head.append(memory_link(rid))
        elif kind == "user_profile":
            head.append(user_link(rid))
        else:
            head.append(f"<code>{esc(rid)}</code>")
    stamp = el.field("timestamp")
    if stamp:
        head.append(f"<span>{esc(when(stamp))}</span>")
    relevance = el.field("estimated_relevance")
    if relevance:
        head.append(f"<span>relevance {esc(relevance[:6])}</span>")
    content = el.field("content")
    body = f'<div class="text">{esc(content)}</div>' if content is not None else ""
    rest = [
        c
        for c in el.children
        if not (isinstance(c, Element) and c.tag in (*_HEAD_FIELDS, "content") and not c.elements)
    ]
    if rest:
        body += _fields(rest)
    return f'<div class="item"><div class="head">{" ".join(head)}</div>{body}</div>'


def _fields(children: list[Element | str]) -> str:
    rows = []
    for c in children:
        if isinstance(c, str):
            rows.append(f'<dt></dt><dd class="text">{esc(c)}</dd>')
        elif c.tag == "thread_id" and not c.elements:
            rows.append(f"<dt>thread</dt><dd>{thread_link(c.text)}</dd>")
        else:
            rows.append(f"<dt>{esc(c.tag)}</dt><dd>{_value(c) if c.elements else esc(c.text)}</dd>")
    return f'<dl class="kv small">{"".join(rows)}</dl>'


def _value(node: Element | str) -> str:
    if isinstance(node, str):
        return _plain(node)
    if not node.elements:
        return (
            f'<dl class="kv small"><dt>{esc(node.tag)}</dt><dd class="text">'
            f"{esc(node.text)}</dd></dl>"
        )
    return f'<dl class="kv small"><dt>{esc(node.tag)}</dt><dd>{_fields(node.children)}</dd></dl>'
