"""HTML building blocks of the ``/ui`` pages: the page frame and its style sheet, links,
cells, badges, stat tiles, tables and page links.

Everything that reaches the page passes through :func:`html.escape` here (text and attribute
values alike); callers join the fragments these functions return and never format stored
text into HTML themselves. No scripts, no external assets: the Content-Security-Policy of
``/ui`` (``security``) allows inline styles only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from fastapi.responses import HTMLResponse

CSS = """
:root{--bg:#f4f6f8;--fg:#1d2329;--muted:#5d6873;--line:#dce2e8;--card:#fff;--accent:#2f63c8;
--head:#1f2a36}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;
color:var(--fg);background:var(--bg)}
a{color:#2354b0}
header.top{background:var(--head);color:#fff;padding:.55rem clamp(1rem,3vw,2.5rem);display:flex;
gap:1.2rem;align-items:center;flex-wrap:wrap}
header.top a{color:#d6e6ff;text-decoration:none}header.top .who{color:#a9b7c5;font-size:.85rem}
header.top form{margin-left:auto}header.top button{background:#33465a;border-color:#4b627a}
main{padding:.8rem clamp(1rem,3vw,2.5rem) 3rem}
nav.crumbs{font-size:.88rem;color:var(--muted);margin:.3rem 0}
h1{font-size:1.45rem;margin:.2rem 0 .8rem;word-break:break-word}
h2{font-size:1.12rem;margin:1.4rem 0 .5rem}
.stats{display:grid;grid-template-columns:repeat(auto-fill,minmax(9rem,1fr));gap:.6rem;
margin:.4rem 0 1rem}
.stat{background:var(--card);border:1px solid var(--line);border-radius:.5rem;padding:.5rem .8rem}
.stat b{display:block;font-size:1.35rem;font-variant-numeric:tabular-nums}
.stat span{color:var(--muted);font-size:.82rem}
.tabs{display:flex;gap:.2rem;border-bottom:2px solid var(--line);margin:.6rem 0 1rem;flex-wrap:wrap}
.tabs a{padding:.45rem .9rem;text-decoration:none;color:var(--muted);border-radius:.4rem .4rem 0 0}
.tabs a.on{background:var(--card);color:var(--fg);border:1px solid var(--line);
border-bottom:2px solid var(--card);margin-bottom:-2px;font-weight:600}
table{border-collapse:collapse;width:100%;background:var(--card);border:1px solid var(--line)}
th,td{border-bottom:1px solid var(--line);padding:.4rem .6rem;text-align:left;
vertical-align:top;font-size:.92rem}
th{background:#eef1f5;font-weight:600;white-space:nowrap}
td.text{white-space:pre-wrap;word-break:break-word;min-width:14rem}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.id{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.8rem;
word-break:break-all;max-width:17rem}
td.when{white-space:nowrap;color:var(--muted);font-size:.85rem}
tr:target td,tr.at td{background:#fff5cf}
tr.invalid td{color:#7a7f85}
.tag{display:inline-block;padding:0 .45rem;border-radius:.7rem;background:#e3ecf7;font-size:.8rem;
white-space:nowrap;color:#1d2329}
.tag.fact{background:#dcf0e0}.tag.preference{background:#f7e6d2}.tag.guideline{background:#ebe0f7}
.tag.message,.tag.thread{background:#e6e9ee}.tag.user_profile,.tag.agent_profile{background:#fbf1c4}
.tag.invalid{background:#f7dcdc;color:#8a1f1f}.tag.ok{background:#e2f2e2;color:#245c2a}.tag.user{background:#dff0f4}
.tag.assistant{background:#eceff3}
.err{background:#fde8e8;border:1px solid #e0a0a0;padding:.6rem .8rem;border-radius:.4rem}
.note{background:#e6f5e6;border:1px solid #9c9;padding:.6rem .8rem;border-radius:.4rem}
.muted{color:var(--muted)}.small{font-size:.85rem}
form.bar{display:flex;flex-wrap:wrap;gap:.5rem .9rem;align-items:flex-end;background:var(--card);
border:1px solid var(--line);border-radius:.5rem;padding:.6rem .8rem;margin:.4rem 0 .8rem}
form.bar label,form.bar fieldset{display:flex;flex-direction:column;font-size:.8rem;
color:var(--muted);gap:.15rem}
form.bar fieldset{border:0;padding:0;margin:0;flex-direction:row;gap:.6rem;align-items:center}
form.bar fieldset legend{float:left;margin-right:.3rem}
form.bar fieldset label{flex-direction:row;gap:.2rem;color:var(--fg);font-size:.88rem}
input,select,textarea,button{font:inherit}
input[type=text],input[type=password],input[type=number],input[type=date],select,textarea{
padding:.3rem .45rem;border:1px solid #c3cbd4;border-radius:.3rem;background:#fff}
textarea{width:100%;min-height:7rem}
button,.button{padding:.35rem .95rem;border:1px solid #2757b3;background:var(--accent);color:#fff;
border-radius:.3rem;cursor:pointer;text-decoration:none;display:inline-block;font-size:.92rem}
button.danger,.button.danger{background:#c23b3b;border-color:#a02c2c}
.button.plain{background:#fff;color:var(--fg);border-color:#c3cbd4}
.actions{display:flex;gap:.6rem;align-items:center;flex-wrap:wrap;margin:.8rem 0}
.pager{display:flex;flex-wrap:wrap;gap:.25rem;align-items:center;margin:.5rem 0}
.pager a,.pager .cur,.pager .gap{padding:.12rem .55rem;border:1px solid var(--line);
border-radius:.3rem;background:var(--card);text-decoration:none}
.pager .cur{background:var(--accent);color:#fff;border-color:var(--accent)}
.pager .gap{border:0;background:none}
.pager .count{margin-right:.7rem;color:var(--muted);font-size:.88rem}
.split{display:grid;gap:1.4rem;align-items:start}
@media(min-width:1100px){.split{grid-template-columns:minmax(0,3fr) minmax(22rem,2fr)}}
.panel{background:var(--card);border:1px solid var(--line);border-radius:.5rem;padding:.7rem 1rem}
.panel h2:first-child{margin-top:.2rem}.panel+.panel{margin-top:1rem}
dl.kv{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.35rem 1.1rem;margin:0}
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;word-break:break-word}
dd.text,p.text,div.text{white-space:pre-wrap;word-break:break-word}
form.stack{max-width:60rem}form.stack label{display:block;margin:.7rem 0 .2rem;font-weight:600}
form.stack .row{display:flex;gap:1rem;flex-wrap:wrap}
form.stack .row>div{flex:1 1 12rem}form.stack .row input,form.stack .row select{width:100%}
form.stack input[type=text]{width:100%}
.cardview section{margin:.2rem 0 .9rem}.cardview h3{font-size:.95rem;margin:.3rem 0 .4rem}
.cardview .item{border-left:3px solid #c4d4ea;padding:.3rem .7rem;margin:.45rem 0;
background:#f9fafc}
.cardview .item .head{display:flex;gap:.5rem;align-items:center;flex-wrap:wrap;
font-size:.85rem;color:var(--muted)}
.chips span{display:inline-block;background:#e3ecf7;border-radius:.7rem;padding:0 .55rem;
margin:0 .3rem .3rem 0;font-size:.88rem}
.confirm{border:1px solid #e0a0a0;background:#fff7f7;border-radius:.5rem;padding:.8rem 1rem;
max-width:60rem}
"""


def esc(value: Any) -> str:
    """``value`` as text, escaped for HTML text and attribute values (None: empty)."""
    return "" if value is None else escape(str(value), quote=True)


def path_of(*segments: str) -> str:
    """``/ui/<seg>/<seg>...`` with every segment percent-encoded (ids may hold ``/``)."""
    return "/ui" + "".join("/" + quote(s, safe="") for s in segments)


def with_query(path: str, params: Mapping[str, Any] | Sequence[tuple[str, Any]]) -> str:
    """``path`` with the non-empty ``params`` as its query string."""
    pairs = params.items() if isinstance(params, Mapping) else params
    kept = [(k, str(v)) for k, v in pairs if v not in (None, "", False)]
    return path + ("?" + urlencode(kept) if kept else "")


def link(href: str, text: Any, **attrs: str) -> str:
    extra = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items())
    return f'<a href="{esc(href)}"{extra}>{esc(text)}</a>'


def memory_link(memory_id: str, text: str | None = None) -> str:
    return link(path_of("memories", memory_id), memory_id if text is None else text)


def thread_link(thread_id: str | None, at: int | None = None) -> str:
    """A link to a thread's page (``at``: the message of that ``seq_no``, highlighted)."""
    if not thread_id:
        return ""
    if at is None:
        return link(path_of("threads", thread_id), thread_id)
    return link(message_href(thread_id, at), thread_id)


def message_href(thread_id: str, seq_no: int | None) -> str:
    """The thread page that shows message ``seq_no``, scrolled to it."""
    if seq_no is None:
        return path_of("threads", thread_id)
    return with_query(path_of("threads", thread_id), {"at": seq_no}) + f"#m-{seq_no}"


def user_link(user_id: str | None) -> str:
    return "" if not user_id else link(path_of("users", user_id), user_id)


def text_of(value: Any) -> str:
    """A stored value as plain text: JSON for dicts and lists."""
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def short(value: Any, limit: int = 280) -> str:
    text = text_of(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def when(value: str | None) -> str:
    """A timestamp as ``YYYY-MM-DD HH:MM`` when it is ISO-8601, else as given."""
    if not value:
        return ""
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return value
    return dt.strftime("%Y-%m-%d %H:%M")


def status_of(record: Any) -> str:
    st = getattr(record, "status", "valid")
    return str(getattr(st, "value", st))


def tag(text: str, kind: str | None = None) -> str:
    return f'<span class="tag {esc(kind or text)}">{esc(text)}</span>'


def status_tag(status: str) -> str:
    return tag(status, "ok" if status == "valid" else "invalid")


def stats(tiles: Iterable[tuple[str, Any]], id_: str = "stats") -> str:
    """Stat tiles: (label, value) pairs."""
    body = "".join(
        f'<div class="stat"><b>{esc(v)}</b><span>{esc(k)}</span></div>' for k, v in tiles
    )
    return f'<div class="stats" id="{esc(id_)}">{body}</div>'


def table(id_: str, headers: Sequence[str], rows: Iterable[str], empty: str) -> str:
    """A table of pre-rendered ``<tr>`` rows; ``empty`` when there are none."""
    body = "".join(rows)
    if not body:
        return f'<p class="muted" id="{esc(id_)}-empty">{esc(empty)}</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    return f'<table id="{esc(id_)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def tabs(items: Sequence[tuple[str, str]], current: str) -> str:
    return (
        '<nav class="tabs">'
        + "".join(
            link(
                href,
                label,
                class_="on" if label == current else "",
                id="tab-" + label.lower().replace(" ", "-"),
            )
            for label, href in items
        )
        + "</nav>"
    )


def pages_of(total: int, per_page: int) -> int:
    """How many pages ``total`` items fill (an empty list has one, empty, page)."""
    return max(1, -(-total // per_page))


def pager(
    path: str,
    params: Mapping[str, Any] | Sequence[tuple[str, Any]],
    *,
    page: int,
    per_page: int,
    total: int,
    name: str = "page",
    id_: str = "pager",
    unit: str = "items",
) -> str:
    """ "51-100 of 663" and links to the first, last, previous, next and nearby pages; every
    link keeps ``params`` (the filters; pairs may repeat a name)."""
    kept = list(params.items() if isinstance(params, Mapping) else params)
    last = pages_of(total, per_page)
    first_item = 0 if total == 0 else (page - 1) * per_page + 1
    last_item = min(total, page * per_page)
    out = [f'<span class="count">{first_item}–{last_item} of {total} {esc(unit)}</span>']

    def to(n: int, text: str | None = None, rel: str | None = None) -> str:
        href = with_query(path, [*kept, (name, n if n > 1 else None)])
        attrs = {"rel": rel} if rel else {}
        return link(href, text or str(n), **attrs)

    if last > 1:
        if page > 1:
            out.append(to(page - 1, "‹ previous", "prev"))
        shown = sorted({1, last, *range(max(1, page - 2), min(last, page + 2) + 1)})
        prev = 0
        for n in shown:
            if n - prev > 1:
                out.append('<span class="gap">…</span>')
            out.append(f'<span class="cur">{n}</span>' if n == page else to(n))
            prev = n
        if page < last:
            out.append(to(page + 1, "next ›", "next"))
    return f'<nav class="pager" id="{esc(id_)}">{"".join(out)}</nav>'


def page(
    title: str,
    body: str,
    *,
    status: int = 200,
    nav: str = "",
    crumbs: Sequence[tuple[str, str | None]] = (),
) -> HTMLResponse:
    """The whole document: header (``nav``: who is logged in, log-out form), breadcrumbs
    ((text, href or None) pairs), the title as heading, then ``body``."""
    trail = ""
    if crumbs:
        trail = (
            '<nav class="crumbs">'
            + " › ".join(link(href, text) if href else esc(text) for text, href in crumbs)
            + "</nav>"
        )
    html = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(title)} · oracleagentmemory</title><style>{CSS}</style></head><body>"
        f"<header class='top'><strong>oracleagentmemory</strong>{nav}</header>"
        f"<main>{trail}<h1>{esc(title)}</h1>{body}</main></body></html>"
    )
    return HTMLResponse(html, status_code=status)
