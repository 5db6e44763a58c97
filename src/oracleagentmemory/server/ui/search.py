"""A user's search tab: a query with a strategy, a scope, record kinds and an optional
"as of" time (what was true then); each hit shows its distance and links to where it lives
(a memory's page, a message inside its thread's page, the thread of a memory, the user of a
profile)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from oracleagentmemory.apis.records import MEMORY_RECORD_TYPES
from oracleagentmemory.server.deps import state_of
from oracleagentmemory.server.state import require_user
from oracleagentmemory.server.ui import params as qp
from oracleagentmemory.server.ui.render import (
    esc,
    link,
    memory_link,
    path_of,
    short,
    table,
    tag,
    text_of,
    thread_link,
    user_link,
    when,
)
from oracleagentmemory.server.ui.session import need_session, ui_route
from oracleagentmemory.server.ui.users import user_frame

router = APIRouter(prefix="/ui", include_in_schema=False)
KINDS: Final = {
    "all": None,
    "memories": list(MEMORY_RECORD_TYPES),
    "messages": ["message"],
    "profiles": ["user_profile"],
}
MAX_RESULTS: Final = (10, 20, 50)


def _form(user_id: str, values: dict[str, Any]) -> str:
    def opts(items: Any, current: Any) -> str:
        return "".join(
            f'<option value="{esc(v)}"{" selected" if v == current else ""}>{esc(v)}</option>'
            for v in items
        )

    checked = " checked" if values["exact_thread"] else ""
    return (
        f'<form method="get" action="{esc(path_of("users", user_id, "search"))}" class="bar" '
        f'id="search"><label>query <input type="text" name="q" id="q" size="40" '
        f'value="{esc(values["q"] or "")}"></label>'
        f'<label>strategy <select name="strategy" id="strategy">'
        f"{opts(qp.STRATEGIES, values['strategy'])}</select></label>"
        f'<label>records <select name="kind" id="kind">{opts(KINDS, values["kind"])}'
        f"</select></label>"
        f'<label>agent <input type="text" name="agent_id" size="12" id="s-agent" '
        f'value="{esc(values["agent_id"] or "")}"></label>'
        f'<label>thread <input type="text" name="thread_id" size="12" id="s-thread" '
        f'value="{esc(values["thread_id"] or "")}"></label>'
        f'<fieldset><label><input type="checkbox" name="exact_thread" value="1"{checked}> '
        f"only this thread</label></fieldset>"
        f'<label>results <select name="max_results" id="max-results">'
        f"{opts([str(n) for n in MAX_RESULTS], str(values['max_results']))}</select></label>"
        f'<label>as of (UTC) <input type="datetime-local" name="as_of" id="as-of" step="1" '
        f'value="{esc(values["as_of"] or "")}"></label>'
        '<button id="go">search</button></form>'
    )


def _where(record: Any) -> str:
    """Links to where a hit lives."""
    rtype = record.record_type
    thread = getattr(record, "thread_id", None)
    if rtype == "message":
        seq = getattr(record, "seq_no", None)
        return f"message #{esc(seq)} in {thread_link(thread, at=seq)}" if thread else ""
    if rtype in MEMORY_RECORD_TYPES:
        return f"thread {thread_link(thread)}" if thread else ""
    if rtype == "user_profile":
        return "profile of " + user_link(record.id)
    return ""


def _hit(result: Any) -> str:
    record = result.record
    rtype = record.record_type
    rid = memory_link(record.id) if rtype in MEMORY_RECORD_TYPES else esc(record.id)
    st = getattr(record, "status", "valid")
    invalid = str(getattr(st, "value", st)) != "valid"
    return (
        f"<tr{' class=invalid' if invalid else ''}><td class='num'>{result.distance:.4f}</td>"
        f"<td>{tag(rtype)}</td><td class='id'>{rid}</td>"
        f"<td class='text'>{esc(short(text_of(result.content), 500))}</td>"
        f"<td class='small'>{_where(record)}</td>"
        f"<td class='when'>{esc(when(record.timestamp))}</td></tr>"
    )


def _as_of(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"as of: {text!r} is not a date and time") from None


@router.get("/users/{user_id:id}/search", response_class=HTMLResponse)
@ui_route
def user_search(request: Request, user_id: str) -> Response:
    session = need_session(request)
    require_user(session.key, user_id)
    state = state_of(request)
    query = request.query_params
    values: dict[str, Any] = {
        "q": qp.text(query, "q", limit=qp.MAX_QUERY_CHARS),
        "strategy": qp.choice(query, "strategy", qp.STRATEGIES, state.default_strategy),
        "kind": qp.choice(query, "kind", tuple(KINDS), "all"),
        "agent_id": qp.text(query, "agent_id"),
        "thread_id": qp.text(query, "thread_id"),
        "exact_thread": qp.choice(query, "exact_thread", ("1", "0"), "0") == "1",
        "max_results": qp.number(query, "max_results", 20, 1, max(MAX_RESULTS)),
        "as_of": qp.text(query, "as_of", limit=64),
    }
    body = _form(user_id, values)
    if values["q"]:
        kwargs: dict[str, Any] = {
            "user_id": user_id,
            "exact_user_match": True,
            "max_results": values["max_results"],
        }
        if KINDS[values["kind"]] is not None:
            kwargs["record_types"] = KINDS[values["kind"]]
        if values["agent_id"]:
            kwargs["agent_id"] = values["agent_id"]
        if values["thread_id"]:
            kwargs["thread_id"] = values["thread_id"]
            kwargs["exact_thread_match"] = values["exact_thread"]
        try:
            if values["as_of"]:  # what was true then (naive: UTC)
                kwargs["as_of"] = _as_of(values["as_of"])
            results = state.client_for(values["strategy"]).search(values["q"], **kwargs)
        except (ValueError, TypeError) as exc:
            body += f'<p class="err" id="search-error">{esc(exc)}</p>'
            results = []
        then = f", as of {esc(values['as_of'])} UTC" if values["as_of"] else ""
        body += (
            f"<h2>Results ({len(results)}, {esc(values['strategy'])}{then})</h2>"
            "<p class='muted small'>Distance: lower is closer. "
            + link(path_of("users", user_id), "back to the memories")
            + "</p>"
            + table(
                "results",
                ["distance", "type", "record", "content", "where", "time"],
                (_hit(r) for r in results),
                "Nothing found.",
            )
        )
    return user_frame(request, session, user_id, "Search", body)
