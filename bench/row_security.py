"""``python -m bench row-security``: what row security (``core.deepsec``) costs on PostgreSQL.

One store of ``n`` records over the corpus's users (bench.data), loaded by its owner; both
policies added and granted to every user's login role. Each row times the same calls two
ways in one run, interleaved: as the owner (no row security, no role switch: the baseline)
and through a pooled service role inside ``OracleMemoryEndUserSecurityContext(user)``
(``SET LOCAL ROLE`` per transaction, then the policies on every table). The searches are
one-user (``exact_user_match``), the writes one-record ``store.add``.
"""

from __future__ import annotations

import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tools.runtime_dir import ensure_runtime_dir

from bench import data
from bench.common import log, machine, percentiles, save_results
from bench.doubles import LookupEmbedder
from bench.postgres import K, _load, _store, configured_server


def _as(url: str, role: str) -> str:
    return re.sub(r"//[^:@/]*(:[^@]*)?@", f"//{role}@", url, count=1)


def main(*, n: int = 20_000, calls: int = 300) -> dict[str, Any]:
    from oracleagentmemory.core import deepsec as ds

    corpus = data.generate(n)
    users = [corpus.user_id(u) for u in range(data.USERS)]
    lookup = LookupEmbedder(dict(zip(corpus.q_texts, corpus.q_vectors, strict=True)), data.DIM)
    res: dict[str, Any] = {
        "machine": machine(),
        "n": n,
        "calls": calls,
        "rows": [],
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with tempfile.TemporaryDirectory(prefix="oam-rlsbench-") as tmp:
        ensure_runtime_dir()
        server = configured_server(Path(tmp) / "pg")
        try:
            server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
            url = server.get_uri()
            owner = {s: _store("postgres", url, s, lookup) for s in ("HYBRID", "VECTOR", "KEYWORD")}
            log(f"row security: loading {n:,} records")
            _load(owner["HYBRID"], corpus)
            owner["HYBRID"]._dialect.ann_catch_up()
            owner["HYBRID"]._dialect.execute("VACUUM ANALYZE")
            server.psql("CREATE ROLE oam_service LOGIN;")
            for user in users:
                server.psql(f'CREATE ROLE "{user}" LOGIN;')
                server.psql(f'GRANT "{user}" TO oam_service WITH INHERIT FALSE, SET TRUE;')
            import psycopg

            policies = [
                ds.UserOwnRowsDeepDataSecurityPolicy(),
                ds.GlobalMemoriesDeepDataSecurityPolicy(),
            ]
            with psycopg.connect(url, autocommit=True) as admin:
                schema = str(admin.execute("SELECT current_schema()").fetchone()[0])  # type: ignore[index]
                ds.add_deep_data_security_policies(admin, schema, "oam", policies)
                ds.grant_agent_memory_policies(
                    admin, "oam", schema, [ds.LocalEndUserPrincipal(u) for u in users], policies
                )
            with ds.OracleMemoryEndUserSecurityContext(users[0]):
                service = {
                    s: _store("postgres", _as(url, "oam_service"), s, lookup)
                    for s in ("HYBRID", "VECTOR", "KEYWORD")
                }
            res["rows"] = _rows(owner, service, corpus, users, calls)
            for store in [*owner.values(), *service.values()]:
                store.close()
        finally:
            server.cleanup()
    save_results("row-security", res, _md(res))
    return res


def _rows(
    owner: dict[str, Any], service: dict[str, Any], corpus: Any, users: list[str], calls: int
) -> list[dict[str, Any]]:
    rng = random.Random(7)
    qs = [rng.randrange(len(corpus.q_texts)) for _ in range(calls)]
    rows: list[dict[str, Any]] = []
    for strategy in ("VECTOR", "KEYWORD", "HYBRID"):

        def search(store: Any, q: int, s: str = strategy) -> Any:
            user = users[int(corpus.q_users[q])]
            return store[s].search(corpus.q_texts[q], K, user_id=user, exact_user_match=True)

        rows.append(_pair(f"{strategy}, one user", owner, service, qs, users, corpus, search))

    def add(store: Any, q: int) -> Any:
        user = users[int(corpus.q_users[q])]
        return store["VECTOR"].add(
            [f"a new note {q}"],
            record_type="memory",
            user_ids=user,
            embeddings=[corpus.q_vectors[q].tolist()],
        )

    rows.append(_pair("store.add, one record", owner, service, qs, users, corpus, add))
    return rows


def _pair(
    name: str, owner: Any, service: Any, qs: list[int], users: list[str], corpus: Any, call: Any
) -> dict[str, Any]:
    from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext as As

    plain: list[float] = []
    policed: list[float] = []
    same = 0
    for q in qs[:20]:  # warm both paths
        call(owner, q)
        with As(users[int(corpus.q_users[q])]):
            call(service, q)
    for q in qs:
        t0 = time.perf_counter()
        a = call(owner, q)
        plain.append(time.perf_counter() - t0)
        with As(users[int(corpus.q_users[q])]):
            t0 = time.perf_counter()
            b = call(service, q)
            policed.append(time.perf_counter() - t0)
        if name.endswith("user") and [r.id for r, _ in a] == [r.id for r, _ in b]:
            same += 1
    p, r = percentiles(plain), percentiles(policed)
    log(f"{name}: {p['p50']:.2f} ms -> {r['p50']:.2f} ms")
    return {
        "row": name,
        "owner": p,
        "end_user": r,
        "same_results": same / len(qs) if name.endswith("user") else None,
    }


def _md(res: dict[str, Any]) -> list[str]:
    lines = [
        "# Row security on PostgreSQL: the cost of the policies",
        "",
        f"{res['started']}, `{res['command']}`, "
        f"{', '.join(f'{k} {v}' for k, v in res['machine'].items())}. {res['n']:,} records over "
        f"{data.USERS} users, {res['calls']} calls per row, interleaved. *owner*: the store's "
        "owner, no row security. *end user*: a pooled service role running each call in "
        "`OracleMemoryEndUserSecurityContext(user)` (SET LOCAL ROLE, then both policies).",
        "",
        "| row | owner p50 ms | end user p50 ms | ratio | end user p95 ms | same top-10 |",
        "|---|---|---|---|---|---|",
    ]
    for row in res["rows"]:
        o, e = row["owner"], row["end_user"]
        same = "" if row["same_results"] is None else f"{row['same_results']:.2f}"
        lines.append(
            f"| {row['row']} | {o['p50']:.2f} | {e['p50']:.2f} | "
            f"{e['p50'] / o['p50']:.2f}x | {e['p95']:.2f} | {same} |"
        )
    return lines
