"""The memory browser at ``/ui``: server-rendered HTML forms, no JavaScript, no external
assets.

Log in with an API key (kept in an HttpOnly, SameSite=Strict cookie). The users page lists
every user that owns records (an admin key) or the key's users, with their counts; a user's
page has tabs for their memories (filtered by type, status, agent, thread and dates, paged),
their threads, search (every hit linked to where it lives) and a form to add a memory. A
thread's page pages its messages and renders its context card; a memory's page shows its
source messages, its thread and its links, an edit form, and delete behind a confirmation
page. The key rule is the API's: a user outside the key is refused with 403, and another
user's thread or memory is "not found", as an unknown id is. Every form post must come from
this server's own pages (same origin) and carry its CSRF token (``security``).

The pages live in one module each; this one only gathers their routes:

=================  ==========================================================
``ui_auth``        log in, log out
``ui_users``       the users list; a user's frame, memories tab, threads tab
``ui_search``      a user's search tab
``ui_create``      the add-a-memory form and its post
``ui_threads``     a thread's page (messages paged, context card)
``ui_memories``    a memory's page, edit, delete confirmation and delete
``ui_card``        the context card parsed and rendered as HTML
``ui_render``      HTML building blocks and the style sheet
``ui_params``      query parameters, checked (400 naming the parameter)
``ui_session``     the session, CSRF checks, error pages
=================  ==========================================================
"""

from __future__ import annotations

from fastapi import APIRouter

from oracleagentmemory.server import (
    ui_auth,
    ui_create,
    ui_memories,
    ui_search,
    ui_threads,
    ui_users,
)

router = APIRouter(include_in_schema=False)
for _part in (ui_auth, ui_users, ui_search, ui_create, ui_threads, ui_memories):
    router.include_router(_part.router)
