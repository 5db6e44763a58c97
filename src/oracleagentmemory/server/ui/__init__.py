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

The pages live in one module each of this package; the package only gathers their routes:

==============  ==========================================================
``auth``        log in, log out
``users``       the users list; a user's frame, memories tab, threads tab
``search``      a user's search tab
``create``      the add-a-memory form and its post
``threads``     a thread's page (messages paged, context card)
``memories``    a memory's page, edit, delete confirmation and delete
``card``        the context card parsed and rendered as HTML
``render``      HTML building blocks and the style sheet
``params``      query parameters, checked (400 naming the parameter)
``session``     the session, CSRF checks, error pages
==============  ==========================================================
"""

from __future__ import annotations

from fastapi import APIRouter

from oracleagentmemory.server.ui import auth, create, memories, search, threads, users

router = APIRouter(include_in_schema=False)
for _part in (auth, users, search, create, threads, memories):
    router.include_router(_part.router)
