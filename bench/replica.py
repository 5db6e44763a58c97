"""``python -m bench replica``: a read replica (issue #50) beside one PostgreSQL server.

A primary and a streaming hot standby (``tools/pg_standby.py``, pgserver's binaries, both on
this machine), one store of ``n`` synthetic records (bench.data: 100 users, 384 dimensions)
loaded on the primary and replayed on the standby. Rows, ``calls`` each, interleaved:

- search p50 on the primary alone (a store without ``read_connection``: single node) and
  through the replica (a store with it: every search served by the standby, nothing
  written meanwhile), one-user VECTOR, KEYWORD and HYBRID searches and an unscoped VECTOR
  search;
- ``store.add`` of one record with and without the replica (a write then also asks the
  primary's WAL insert position, one more statement after the commit);
- write+read mixes on the store with the replica: one write every ``reads_per_write``
  searches (each search right after the write, or later), the fraction of searches the
  standby served (read-your-writes: a search goes there only once it has replayed this
  store's last commit), and their p50.

Both servers share this machine's cores: the figures show the routing's latency and how
often the standby answers, not the capacity a second machine adds.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tools.runtime_dir import ensure_runtime_dir

from bench import data
from bench.common import log, machine, percentiles, save_results
from bench.doubles import LookupEmbedder

K = 10
MIXES = (1, 4, 16)
"""Searches per write in the write+read rows."""


def open_store(url: str, lookup: Any, strategy: str, read: str | None = None) -> Any:
    """A PostgreSQL store of the bench's corpus dimension at ``url`` searching by
    ``strategy`` (``read``: its read replica)."""
    from oracleagentmemory.core import PostgresMemoryStore, SchemaPolicy
    from oracleagentmemory.core.dbsearch import SearchStrategy

    return PostgresMemoryStore(
        lookup,
        url,
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        vector_dim=data.DIM,
        search_strategy=SearchStrategy[strategy],
        read_connection=read,
    )


def main(*, n: int = 20_000, calls: int = 300) -> dict[str, Any]:
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from tools.pg_standby import Standby, start_primary

    corpus = data.generate(n)
    users = [corpus.user_id(u) for u in range(data.USERS)]
    lookup = LookupEmbedder(dict(zip(corpus.q_texts, corpus.q_vectors, strict=True)), data.DIM)
    res: dict[str, Any] = {
        "machine": machine(),
        "n": n,
        "calls": calls,
        "rows": [],
        "mixes": [],
        "command": " ".join(["python -m bench", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with tempfile.TemporaryDirectory(prefix="oam-replicabench-") as tmp:
        ensure_runtime_dir()
        primary = start_primary(Path(tmp) / "primary")
        standby = None
        try:
            primary.sql("CREATE EXTENSION IF NOT EXISTS vector")
            url = primary.dsn()
            loader = open_store(url, lookup, "HYBRID")
            log(f"replica: loading {n:,} records")
            for s in range(0, n, 1000):
                corpus.add_rows(loader, s, min(n, s + 1000))
            loader._dialect.ann_catch_up()
            loader._dialect.execute("VACUUM ANALYZE")
            standby = Standby.create(url, Path(tmp) / "standby")
            standby.catch_up(url, timeout=300)
            kinds = ("VECTOR", "KEYWORD", "HYBRID")
            single = {s: open_store(url, lookup, s) for s in kinds}
            routed = {s: open_store(url, lookup, s, standby.dsn) for s in kinds}
            res["load_before"] = os.getloadavg()[0]
            res["rows"] = _rows(single, routed, corpus, users, calls)
            res["mixes"] = _mixes(routed["VECTOR"], corpus, users, calls)
            res["load_after"] = os.getloadavg()[0]
            for store in [loader, *single.values(), *routed.values()]:
                store.close()
        finally:
            if standby is not None:
                standby.stop()
            primary.stop()
    save_results("replica", res, _md(res))
    return res


def _search(store: Any, corpus: Any, users: list[str], q: int, scoped: bool = True) -> Any:
    if not scoped:
        return store.search(corpus.q_texts[q], K)
    user = users[int(corpus.q_users[q])]
    return store.search(corpus.q_texts[q], K, user_id=user, exact_user_match=True)


def _rows(
    single: dict[str, Any], routed: dict[str, Any], corpus: Any, users: list[str], calls: int
) -> list[dict[str, Any]]:
    rng = random.Random(7)
    qs = [rng.randrange(len(corpus.q_texts)) for _ in range(calls)]
    rows: list[dict[str, Any]] = []
    cases = [
        ("VECTOR, one user", "VECTOR", True),
        ("KEYWORD, one user", "KEYWORD", True),
        ("HYBRID, one user", "HYBRID", True),
        ("VECTOR, all users", "VECTOR", False),
    ]
    for name, strategy, scoped in cases:

        def call(store: Any, q: int, s: str = strategy, sc: bool = scoped) -> Any:
            return _search(store[s], corpus, users, q, sc)

        rows.append(_pair(name, routed[strategy], single, routed, qs, call))
    n = corpus.n

    def add(store: Any, q: int) -> Any:
        nonlocal n
        n += 1
        user = users[int(corpus.q_users[q])]
        return store["VECTOR"].add(
            [f"a new note {n}"],
            record_type="memory",
            user_ids=user,
            embeddings=[corpus.q_vectors[q].tolist()],
        )

    rows.append(_pair("store.add, one record", routed["VECTOR"], single, routed, qs, add))
    return rows


def _pair(
    name: str,
    counted: Any,
    single: dict[str, Any],
    routed: dict[str, Any],
    qs: list[int],
    call: Any,
) -> dict[str, Any]:
    replica = counted._dialect.replica
    for q in qs[:20]:  # warm both paths
        call(single, q)
        call(routed, q)
    time.sleep(0.05)  # the standby replays what the warm-up wrote
    before = dict(replica.served)
    alone: list[float] = []
    through: list[float] = []
    same = 0
    for q in qs:
        t0 = time.perf_counter()
        a = call(single, q)
        alone.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        b = call(routed, q)
        through.append(time.perf_counter() - t0)
        if not name.startswith("store.") and [r.id for r, _ in a] == [r.id for r, _ in b]:
            same += 1
    served = {k: replica.served[k] - before[k] for k in before}
    p, r = percentiles(alone), percentiles(through)
    log(f"{name}: {p['p50']:.2f} ms -> {r['p50']:.2f} ms, replica served {served}")
    return {
        "row": name,
        "primary": p,
        "replica": r,
        "served": served,
        "same_results": None if name.startswith("store.") else same / len(qs),
    }


def _mixes(store: Any, corpus: Any, users: list[str], calls: int) -> list[dict[str, Any]]:
    rng = random.Random(11)
    replica = store._dialect.replica
    out: list[dict[str, Any]] = []
    n = 0
    for per_write in MIXES:
        before = dict(replica.served)
        lat: list[float] = []
        for i in range(calls):
            q = rng.randrange(len(corpus.q_texts))
            if i % per_write == 0:
                n += 1
                user = users[int(corpus.q_users[q])]
                store.add(
                    [f"mixed note {per_write}.{n}"],
                    record_type="memory",
                    user_ids=user,
                    embeddings=[corpus.q_vectors[q].tolist()],
                )
            t0 = time.perf_counter()
            _search(store, corpus, users, q)
            lat.append(time.perf_counter() - t0)
        served = {k: replica.served[k] - before[k] for k in before}
        share = served["replica"] / max(1, served["replica"] + served["primary"])
        p = percentiles(lat)
        log(f"1 write : {per_write} searches: replica served {share:.2f}, p50 {p['p50']:.2f}")
        out.append(
            {"searches_per_write": per_write, "served": served, "replica_share": share, "search": p}
        )
    return out


def _md(res: dict[str, Any]) -> list[str]:
    lines = [
        "# A read replica beside one PostgreSQL server",
        "",
        f"{res['started']}, `{res['command']}`, "
        f"{', '.join(f'{k} {v}' for k, v in res['machine'].items())}. {res['n']:,} records over "
        f"{data.USERS} users, {res['calls']} calls per row, interleaved. *primary*: a store "
        "without `read_connection` (single node). *via replica*: a store with a streaming hot "
        "standby as `read_connection` (both servers on this machine, sharing its cores). "
        f"Load average (1 min) {res.get('load_before', float('nan')):.2f} before the rows, "
        f"{res.get('load_after', float('nan')):.2f} after.",
        "",
        "| row | primary p50 ms | via replica p50 ms | ratio | via replica p95 ms "
        "| served by replica | same top-10 |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in res["rows"]:
        o, e, s = row["primary"], row["replica"], row["served"]
        share = s["replica"] / max(1, s["replica"] + s["primary"])
        same = "" if row["same_results"] is None else f"{row['same_results']:.2f}"
        shown = "" if row["row"].startswith("store.") else f"{share:.2f}"
        lines.append(
            f"| {row['row']} | {o['p50']:.2f} | {e['p50']:.2f} | "
            f"{e['p50'] / o['p50']:.2f}x | {e['p95']:.2f} | {shown} | {same} |"
        )
    lines += [
        "",
        "Write+read mix on the store with the replica (VECTOR, one user; each write one "
        "`store.add`, the next search right after it): the share of searches the standby "
        "served (read-your-writes sends a search to the primary until the standby has "
        "replayed the store's last commit).",
        "",
        "| searches per write | served by replica | search p50 ms | search p95 ms |",
        "|---|---|---|---|",
    ]
    for mix in res["mixes"]:
        p = mix["search"]
        lines.append(
            f"| {mix['searches_per_write']} | {mix['replica_share']:.2f} | "
            f"{p['p50']:.2f} | {p['p95']:.2f} |"
        )
    return lines
