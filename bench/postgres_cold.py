"""Cold users of ``python -m bench postgres`` (``cold``, on a pgserver of its own).

What a user's first search costs, each
timed search the first of its user in a store that has searched none (``ColdCorpus``: 12
words a record from a Zipf vocabulary, random vectors, users' records interleaved), at 500
and 2,000 records per user (``--cold-n 100000 1000000``: the N sweep, at 2,000), at
pgserver's default ``shared_buffers`` and then at a dedicated server's, SQLite in the same
run query by query; the second and a settled third search of each user too, and the
statements a first search sends (its thread's and the branch thread's) with the rows read
(``EXPLAIN (ANALYZE, BUFFERS)`` of the same statements; pgserver ships no
``pg_stat_statements``), and those the cache's fill sends after the answer.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import data
from bench.common import log, percentiles
from bench.doubles import LookupEmbedder
from bench.postgres_common import K, _store, _unit, _wait_fills, shared_buffers_mb

COLD_PER_USER = (500, 2000)
"""Records per user of the cold-user rows (at ``COLD_N`` records)."""
COLD_N = (100_000,)
"""Store sizes of the cold-user rows; the sweep (``--cold-n 100000 1000000``) runs them at
``COLD_SWEEP_PER_USER`` records per user."""
COLD_SWEEP_PER_USER = 2000
COLD_WORDS = 12
"""Words per record, drawn from a Zipf vocabulary of ``COLD_VOCABULARY`` words."""
COLD_VOCABULARY = 20_000
COLD_EXPLAINED = 5
"""Cold searches per row whose statements are run again under ``EXPLAIN (ANALYZE,
BUFFERS)`` for the rows and pages they read."""
SCAN_NODES = {"Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan"}
COLD_PAIRS = (("sqlite", "prefilled"), ("sqlite_sql", "postgres"))
"""The cold rows' stores, timed a pair at a time, the pair's two interleaved query by query:
a search ranked in SQL reads about 140 pages a 500-chunk user from the OS, and timed beside
them the other stores' searches (SQLite's too) were 1.4-1.6x slower than alone (at 100k,
500 a user, 128 MB: PG prefilled 1.18 against 0.84 ms, SQLite 0.69 against 0.53); each
PostgreSQL column is set against the SQLite store timed beside it."""


class ColdCorpus:
    """``n`` records of ``n // per_user`` users (interleaved, as live writes land), each
    ``COLD_WORDS`` words of a Zipf vocabulary and a random unit vector; one query per user
    (three mid-frequency words, a random vector)."""

    def __init__(self, n: int, per_user: int, seed: int = 11) -> None:
        rng = np.random.default_rng(seed)
        syllables = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai")]
        vocab: list[str] = []
        seen: set[str] = set()
        while len(vocab) < COLD_VOCABULARY:
            word = "".join(rng.choice(syllables, int(rng.integers(2, 4))).tolist())
            if word not in seen:
                seen.add(word)
                vocab.append(word)
        weights = 1.0 / np.arange(1, COLD_VOCABULARY + 1) ** 1.07
        weights /= weights.sum()
        self.n, self.per_user = n, per_user
        self.users = max(1, n // per_user)
        draws = rng.choice(COLD_VOCABULARY, (n, COLD_WORDS), p=weights)
        self.texts = [" ".join(vocab[w] for w in row) for row in draws.tolist()]
        self.vectors = _unit(rng, n)
        mid = np.arange(50, 5000)
        picks = rng.choice(mid, (self.users, 3), p=weights[mid] / weights[mid].sum())
        self.q_texts = [" ".join(vocab[w] for w in row) + f" q{u}" for u, row in
                        enumerate(picks.tolist())]  # fmt: skip
        self.q_vectors = _unit(rng, self.users)

    def user_id(self, u: int) -> str:
        return f"cold{u:05d}"

    def add(self, store: Any) -> float:
        """Records/s of loading every record into ``store``, 1,000 per call."""
        t0 = time.perf_counter()
        for s in range(0, self.n, 1000):
            e = min(self.n, s + 1000)
            store.add(
                self.texts[s:e],
                record_type="memory",
                embeddings=list(self.vectors[s:e]),
                record_ids=[f"c{i}" for i in range(s, e)],
                user_ids=[self.user_id(i % self.users) for i in range(s, e)],
                batch_size=e - s,
            )
        return self.n / (time.perf_counter() - t0)


BRANCH = "branch"
"""The sender of a statement a search's vector branch sent from the branch thread."""


def _sender() -> Any:
    """Who sends a statement: the branch thread (:data:`BRANCH`) or a thread's ident."""
    thread = threading.current_thread()
    return BRANCH if thread.name.startswith("oam-vector-branch") else thread.ident


class StatementTrace:
    """The statements a process sends (psycopg's ``Cursor.execute``, patched while
    installed), with the thread that sent them (:func:`_sender`)."""

    def __init__(self) -> None:
        self.on = False
        self.sent: list[tuple[int, str, Any]] = []
        self._lock = threading.Lock()
        self._original: Any = None

    def install(self) -> None:
        import psycopg

        original = self._original = psycopg.Cursor.execute
        trace = self

        def execute(cur: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            if trace.on and not threading.current_thread().name.startswith("oam-ann"):
                with trace._lock:
                    trace.sent.append((_sender(), str(query), params))
            return original(cur, query, params, **kw)

        psycopg.Cursor.execute = execute  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        import psycopg

        if self._original is not None:
            psycopg.Cursor.execute = self._original  # type: ignore[method-assign]
            self._original = None

    def take(self) -> list[tuple[int, str, Any]]:
        with self._lock:
            got, self.sent = self.sent, []
        return got


def explained(url: str, statements: list[tuple[str, Any]]) -> dict[str, float]:
    """The rows the scans of ``statements`` read (tuples returned and filtered out, every
    loop), the rows they returned and their shared pages (hit + read), each run again under
    ``EXPLAIN (ANALYZE, BUFFERS)``; statements other than queries count as statements only."""
    import psycopg

    out = {"statements": float(len(statements)), "rows_read": 0.0, "rows_returned": 0.0,
           "pages": 0.0}  # fmt: skip

    def walk(node: dict[str, Any]) -> float:
        loops = float(node.get("Actual Loops", 1))
        got = 0.0
        if node.get("Node Type") in SCAN_NODES:
            got += loops * (
                float(node.get("Actual Rows", 0))
                + float(node.get("Rows Removed by Filter", 0))
                + float(node.get("Rows Removed by Index Recheck", 0))
            )
        return got + sum(walk(child) for child in node.get("Plans", ()))

    with psycopg.connect(url, autocommit=True) as conn:
        for query, params in statements:
            if not query.lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            row = conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query, params
            ).fetchone()
            assert row is not None
            plan = (row[0] if isinstance(row[0], list) else json.loads(row[0]))[0]["Plan"]
            out["rows_read"] += walk(plan)
            out["rows_returned"] += float(plan.get("Actual Rows", 0))
            out["pages"] += float(plan.get("Shared Hit Blocks", 0)) + float(
                plan.get("Shared Read Blocks", 0)
            )
    return out


def _pg_settle(url: str, schema: str) -> None:
    """A loaded cold-row schema with its visibility map set and the approximate index's
    queue emptied (user-scoped searches never read the graph, and no indexer then runs
    during the timing). No ``ANALYZE``: the statistics are those the store's own writes
    left (issue #53), whatever autovacuum's timing."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"TRUNCATE {schema}.oam_ann_queue")
        conn.execute(f"VACUUM {schema}.oam_chunks, {schema}.oam_records, {schema}.oam_kw")
        conn.execute("CHECKPOINT")


def _schema_url(url: str, schema: str) -> str:
    return f"{url}&options=-csearch_path%3D{schema}%2Cpublic"


def _pg_store(url: str, strategy: str, lookup: Any, prefill: bool) -> Any:
    """A PostgreSQL store whose pass at open reads users in (``prefill``) or not."""
    from oracleagentmemory.core.store.search._user_vectors import PREFILL_ENV

    saved = os.environ.get(PREFILL_ENV)
    if prefill:
        os.environ.pop(PREFILL_ENV, None)
    else:
        os.environ[PREFILL_ENV] = "0"
    try:
        return _store("postgres", url, strategy, lookup)
    finally:
        if saved is None:
            os.environ.pop(PREFILL_ENV, None)
        else:
            os.environ[PREFILL_ENV] = saved


def cold_rows(
    url: str,
    work: Path,
    corpus: ColdCorpus,
    schema: str,
    setting: str,
    trace: StatementTrace,
    max_users: int,
) -> list[dict[str, Any]]:
    """One row per strategy: each timed search the first of its user in a store that has
    searched none of them (SQLite and PostgreSQL interleaved query by query), then the
    second search of each, then the third once the caches settled (warm); with the
    statements and rows of a few first searches on PostgreSQL. PostgreSQL twice: with
    the pass at open off (``postgres``: a first search ranked in SQL) and on, its pass
    finished before the timing (``prefilled``); and first, a store timed from the moment
    it opened, its pass still reading (``opened``)."""
    pg_url = _schema_url(url, schema)
    sqlite_path = str(work / f"{schema}.db")
    lookup = LookupEmbedder(dict(zip(corpus.q_texts, corpus.q_vectors, strict=True)), data.DIM)
    uid = [corpus.user_id(u) for u in range(corpus.users)]
    order = np.random.default_rng(3).permutation(np.arange(1, corpus.users)).tolist()
    order = order[:max_users]
    rows = []
    main_thread = _sender()
    for strategy in ("VECTOR", "KEYWORD", "HYBRID"):

        def call(store: Any, u: int, strategy: str = strategy) -> Any:
            if strategy == "VECTOR":
                return store.search(None, K, query_vector=corpus.q_vectors[u], user_id=uid[u],
                                    exact_user_match=True)  # fmt: skip
            return store.search(corpus.q_texts[u], K, user_id=uid[u], exact_user_match=True)

        # Just opened: the pass at open reads users in while these first searches run.
        t_open = time.perf_counter()
        opened = _pg_store(pg_url, strategy, lookup, prefill=True)
        call(opened, 0)  # the store's own first use
        opened_lat = []
        for u in order:
            t0 = time.perf_counter()
            call(opened, u)
            opened_lat.append(time.perf_counter() - t0)
        timed_s = time.perf_counter() - t_open
        _wait_fills(opened, 120.0)
        opened_fill_s = time.perf_counter() - t_open
        opened_users = len(opened._vectors.users.prefilled)
        opened.close()
        stores = {
            "sqlite": _store("sqlite", sqlite_path, strategy, lookup),
            "prefilled": _pg_store(pg_url, strategy, lookup, prefill=True),
            "sqlite_sql": _store("sqlite", sqlite_path, strategy, lookup),
            "postgres": _pg_store(pg_url, strategy, lookup, prefill=False),
        }
        for store in stores.values():  # the store's own first use (not a user's): user 0
            call(store, 0)
            call(store, 0)
            _wait_fills(store, 120.0)
        lat: dict[str, dict[str, list[float]]] = {
            e: {"cold": [], "second": [], "warm": []} for e in stores
        }
        statements: list[list[tuple[str, Any]]] = []
        fills: list[tuple[str, Any]] = []
        got: dict[int, dict[str, list[str]]] = {u: {} for u in order}
        same = 0
        for pass_name, pair in (
            (pass_name, pair) for pass_name in ("cold", "second", "warm") for pair in COLD_PAIRS
        ):
            if pass_name == "warm":
                for store in stores.values():
                    _wait_fills(store)
            for i, u in enumerate(order):
                for engine in pair:
                    store = stores[engine]
                    # The first searches' statements (and the second's fill, after it).
                    traced = engine == "postgres" and pass_name != "warm" and i < COLD_EXPLAINED
                    if traced:
                        trace.take()
                        trace.on = True
                    t0 = time.perf_counter()
                    hits = call(store, u)
                    lat[engine][pass_name].append(time.perf_counter() - t0)
                    if traced:
                        _wait_fills(store)  # a fill it asked for belongs to this search
                        trace.on = False
                        sent = trace.take()
                        # The request's: this thread's and the branch thread's (a HYBRID
                        # search ranks its vector branch there); the rest are the fill's.
                        mine = [(q, p) for t, q, p in sent if t in (main_thread, BRANCH)]
                        fills.extend((q, p) for t, q, p in sent if t not in (main_thread, BRANCH))
                        if pass_name == "cold":
                            statements.append(mine)
                        if i == 0 and pass_name == "cold":
                            log(f"{strategy} first search statements: {len(mine)}")
                    got[u][engine] = [r.id for r, _ in hits]
                if engine == "postgres":
                    ids = got[u]
                    same += int(ids["sqlite"] == ids["sqlite_sql"] == ids["postgres"]
                                == ids["prefilled"])  # fmt: skip
        per_search = [explained(pg_url, s) for s in statements]
        fill_cost = explained(pg_url, fills) if fills else None
        row: dict[str, Any] = {
            "strategy": strategy,
            "n": corpus.n,
            "per_user": corpus.per_user,
            "shared_buffers": setting,
            "users_timed": len(order),
            "same_ids_share": same / (3 * len(order)),
            "pg_first_search": {
                key: float(np.mean([p[key] for p in per_search])) for key in per_search[0]
            },
            "pg_fill_per_user": None
            if fill_cost is None
            else {k: v / len(statements) for k, v in fill_cost.items()},
            "opened_ms": percentiles(opened_lat),
            "opened_timed_s": timed_s,
            "opened_fill_s": opened_fill_s,
            "opened_users_read": opened_users,
        }
        for engine in stores:
            for pass_name, values in lat[engine].items():
                row[f"{engine}_{pass_name}_ms"] = percentiles(values)
        for store in stores.values():
            store.close()
        log(
            f"cold {strategy} n={corpus.n:,} per_user={corpus.per_user} {setting}:"
            f" sqlite cold p50 {row['sqlite_cold_ms']['p50']:.2f}"
            f" (beside SQL {row['sqlite_sql_cold_ms']['p50']:.2f})"
            f" pg cold p50 {row['postgres_cold_ms']['p50']:.2f}"
            f" p99 {row['postgres_cold_ms']['p99']:.2f}"
            f" (sqlite {row['sqlite_cold_ms']['p99']:.2f})"
            f" second {row['postgres_second_ms']['p50']:.2f}"
            f" warm {row['postgres_warm_ms']['p50']:.2f}"
            f" prefilled cold p50 {row['prefilled_cold_ms']['p50']:.2f}"
            f" warm {row['prefilled_warm_ms']['p50']:.2f}"
            f" p99 {row['prefilled_cold_ms']['p99']:.2f}"
            f" opened p50 {row['opened_ms']['p50']:.2f} p99 {row['opened_ms']['p99']:.2f}"
            f" (timed {timed_s:.1f}s, fill {opened_fill_s:.1f}s)"
            f" stmts {row['pg_first_search']['statements']:.1f}"
            f" rows read {row['pg_first_search']['rows_read']:.0f}"
        )
        rows.append(row)
    return rows


def cold(
    work: Path,
    sizes: tuple[int, ...] = COLD_N,
    per_users: tuple[int, ...] = COLD_PER_USER,
    max_users: int = 200,
    rounds: int = 1,
) -> dict[str, Any]:
    """The cold-user rows: every corpus loaded into both engines (PostgreSQL on a pgserver of
    its own, its default ``shared_buffers`` first), each timed at the default setting and
    again after a restart with a dedicated server's; ``rounds`` times over, each round on a
    new server and new files (a load, then the timing: the spread between rounds is how
    stable the plans after a bulk load are, issue #53)."""
    out: dict[str, Any] = {"rows": [], "build": {}, "load": os.getloadavg(), "stats": []}
    for r in range(rounds):
        _cold_round(work / f"cold-{r}", sizes, per_users, max_users, out, r)
    out["load_after"] = os.getloadavg()
    return out


def _cold_round(
    work: Path,
    sizes: tuple[int, ...],
    per_users: tuple[int, ...],
    max_users: int,
    out: dict[str, Any],
    round_no: int,
) -> None:
    """One round of :func:`cold`, into ``out``."""
    import pgserver

    work.mkdir(parents=True)
    shapes = [(n, p) for n in sizes if n <= min(sizes) for p in per_users]
    shapes += [(n, COLD_SWEEP_PER_USER) for n in sizes if n > min(sizes)]
    pgdata = work / "pg-cold"
    server = pgserver.get_server(str(pgdata), cleanup_mode="stop")
    trace = StatementTrace()
    trace.install()
    try:
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        url = server.get_uri()
        out["server"] = server.psql("SELECT version();").split("\n")[2].strip()[:40]
        corpora = []
        for n, per_user in shapes:
            corpus = ColdCorpus(n, per_user)
            schema = f"cold_{n}_{per_user}"
            server.psql(f"CREATE SCHEMA IF NOT EXISTS {schema};")
            for engine, conn in (
                ("sqlite", str(work / f"{schema}.db")),
                ("postgres", _schema_url(url, schema)),
            ):
                log(f"cold rows: loading {n:,} records ({per_user}/user) into {engine}")
                store = _store(engine, conn, "HYBRID")
                key = f"round {round_no}: {engine} {schema} records/s"
                out["build"][key] = corpus.add(store)
                store.close()
            out["stats"].append({"round": round_no, "schema": schema, **_stats_of(url, schema)})
            _pg_settle(url, schema)
            corpora.append((corpus, schema))
        for setting in ("default", "tuned"):
            if setting == "tuned":
                server.psql(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers_mb()}MB';")
                server.cleanup()
                server = pgserver.get_server(str(pgdata), cleanup_mode="stop")
                url = server.get_uri()
            shown = server.psql("SHOW shared_buffers;").split("\n")[2].strip()
            for corpus, schema in corpora:
                rows = cold_rows(
                    url, work, corpus, schema, f"{setting} ({shown})", trace, max_users
                )
                out["rows"] += [{**row, "round": round_no} for row in rows]
    finally:
        trace.uninstall()
        server.cleanup()


def _stats_of(url: str, schema: str) -> dict[str, Any]:
    """Right after a load's store closed: who last analyzed its records and chunks (the
    store, ``last_analyze``; autovacuum, ``last_autoanalyze``), and the rows estimated."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT s.relname, s.last_analyze IS NOT NULL, s.last_autoanalyze IS NOT NULL,"
            " c.reltuples FROM pg_stat_all_tables s JOIN pg_class c ON c.oid = s.relid"
            " WHERE s.schemaname = %s AND s.relname IN ('oam_records', 'oam_chunks')",
            [schema],
        ).fetchall()
    return {
        str(name): {"store": bool(mine), "autovacuum": bool(auto), "reltuples": float(n)}
        for name, mine, auto, n in rows
    }


def _cold_md(c: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## Cold users: each timed search the first of its user (k = 10, user-scoped)",
        "",
        "Each store (one per strategy and engine) has searched none of the users it is timed"
        " on (one other user first, for the store's own first use); SQLite and PostgreSQL"
        " interleaved query by query, a pair of stores at a time: PG prefilled beside one"
        " SQLite store, then PG (SQL) beside another (`COLD_PAIRS`: timed beside SQL-ranked"
        " searches, every store was slower), each PostgreSQL column set against the SQLite"
        " store beside it. *PG (SQL)*: the pass at open off, a first search ranked"
        " in SQL. *PG prefilled*: the pass at open on and finished before the timing (every"
        " user it could hold read in). *PG just opened*: a store timed from its open, its"
        " pass still reading (its own column: how long the timing took and the pass; users"
        " read). Ratios against SQLite's cold figures of the same row. *Second*: the same"
        " users again; *warm*: a third time, after the caches settled. Statements and rows:"
        " the PostgreSQL statements the request itself sent for a first search with the pass"
        " off (their scans' rows read, the rows returned, shared pages), from `EXPLAIN"
        " (ANALYZE, BUFFERS)` of the same statements; *fill*: those the user cache sent after"
        " the answer to load the user."
        f" Load average at start / end: {' '.join(f'{x:.2f}' for x in c['load'])} /"
        f" {' '.join(f'{x:.2f}' for x in c.get('load_after', ()))}.",
        "",
        "| round | N | records/user | shared_buffers | strategy | SQLite cold p50 / p99"
        " (beside SQL) |"
        " PG (SQL) cold p50 / p99, / SQLite | PG prefilled cold p50 / p99, / SQLite |"
        " PG just opened p50 / p99, / SQLite (timed s, pass s, users) |"
        " PG second p50 (prefilled) | PG warm p50 (prefilled; SQLite) |"
        " first search: statements, rows read, rows returned, pages | fill: statements, rows"
        " read | same ids |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def cell(p: dict[str, float], sc: dict[str, float]) -> str:
        return (
            f"{p['p50']:.2f} / {p['p99']:.2f}, {p['p50'] / sc['p50']:.1f}x /"
            f" {p['p99'] / sc['p99']:.1f}x"
        )

    for r in c["rows"]:
        sc = r["sqlite_cold_ms"]
        sq = r.get("sqlite_sql_cold_ms", sc)
        f = r["pg_first_search"]
        fill = r.get("pg_fill_per_user")
        fills = "-" if not fill else f"{fill['statements']:.1f}, {fill['rows_read']:,.0f}"
        opened = "-"
        if "opened_ms" in r:
            opened = (
                f"{cell(r['opened_ms'], sc)} ({r['opened_timed_s']:.1f}, "
                f"{r['opened_fill_s']:.1f}, {r['opened_users_read']})"
            )
        prefilled = cell(r["prefilled_cold_ms"], sc) if "prefilled_cold_ms" in r else "-"
        lines.append(
            f"| {r.get('round', 0)} | {r['n']:,} | {r['per_user']:,} | {r['shared_buffers']} |"
            f" {r['strategy']} | {sc['p50']:.2f} / {sc['p99']:.2f}"
            f" ({sq['p50']:.2f} / {sq['p99']:.2f}) |"
            f" {cell(r['postgres_cold_ms'], sq)} | {prefilled} | {opened} |"
            f" {r['postgres_second_ms']['p50']:.2f}"
            f" ({r.get('prefilled_second_ms', {}).get('p50', float('nan')):.2f}) |"
            f" {r['postgres_warm_ms']['p50']:.2f}"
            f" ({r.get('prefilled_warm_ms', {}).get('p50', float('nan')):.2f};"
            f" {r['sqlite_warm_ms']['p50']:.2f}) |"
            f" {f['statements']:.1f}, {f['rows_read']:,.0f}, {f['rows_returned']:,.0f},"
            f" {f['pages']:,.0f} | {fills} | {r['same_ids_share']:.3f} |"
        )
    lines += _spread_md(c)
    lines += ["", *[f"- {k}: {v:.0f}" for k, v in c["build"].items()]]
    for st in c.get("stats", []):
        got = ", ".join(
            f"{name}: ~{v['reltuples']:,.0f} rows, analyzed by the store {v['store']},"
            f" by autovacuum {v['autovacuum']}"
            for name, v in sorted(st.items())
            if isinstance(v, dict)
        )
        lines.append(f"- round {st['round']}, {st['schema']} right after its load: {got}")
    return lines


def _spread_md(c: dict[str, Any]) -> list[str]:
    """Each row's p50 in every round and their spread (max / min): how stable the plans
    after a bulk load are (issue #53)."""
    rounds = sorted({r.get("round", 0) for r in c["rows"]})
    if len(rounds) < 2:
        return []
    by: dict[tuple[Any, ...], dict[int, dict[str, Any]]] = {}
    for r in c["rows"]:
        key = (r["n"], r["per_user"], r["shared_buffers"].split(" ")[0], r["strategy"])
        by.setdefault(key, {})[r.get("round", 0)] = r
    out = [
        "",
        f"### Repeated runs: p50 in each of {len(rounds)} rounds (a new server, a new load"
        " each) and the spread, max / min",
        "",
        "| N | records/user | shared_buffers | strategy | SQLite cold | PG (SQL) cold |"
        " PG prefilled cold | PG just opened | PG warm |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, per in by.items():
        cells = []
        for field in ("sqlite_cold_ms", "postgres_cold_ms", "prefilled_cold_ms", "opened_ms",
                      "postgres_warm_ms"):  # fmt: skip
            vals = [per[r][field]["p50"] for r in rounds if r in per and field in per[r]]
            if not vals:
                cells.append("-")
                continue
            shown = " / ".join(f"{v:.2f}" for v in vals)
            cells.append(f"{shown} ({max(vals) / min(vals):.2f}x)")
        n, per_user, setting, strategy = key
        out.append(f"| {n:,} | {per_user:,} | {setting} | {strategy} | {' | '.join(cells)} |")
    return out


# ---------------------------------------------------------------------------- report
