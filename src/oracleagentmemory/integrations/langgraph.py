"""LangGraph long-term memory on OracleAgentMemory: :class:`AgentMemoryStore`, a ``BaseStore``.

Every item is one memory record of the client's store (record type ``memory``): its id is
keyed by the store's secret over (user, agent, namespace, key), its content is the value's
exact JSON text, and its metadata holds the namespace, key, times, TTL and a copy of the
value that ``filter`` matches. A record is read or overwritten as an item only when it is
this store's own (its user the one the namespace maps to, its agent this store's): ids alone
are never trusted. Semantic search embeds the ``index`` fields with the client's embedder
and ranks with the client's search strategy. See ``docs/integrations/langgraph.md``.
"""

from __future__ import annotations

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        Item,
        Op,
        Result,
        SearchItem,
        TTLConfig,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "oracleagentmemory.integrations.langgraph needs LangGraph: "
        'pip install "recallwell[langgraph]"'
    ) from exc

import asyncio
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.apis.records import Record, ScopedRecord
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core.dbsearch import SearchStrategy
from oracleagentmemory.core.oracleagentmemory import OracleAgentMemory
from oracleagentmemory.core.store._limits import (
    MAX_ID_CHARS,
    MAX_LIST_ROWS,
    MAX_SEARCH_RESULTS,
)
from oracleagentmemory.integrations._langgraph_codec import (
    META,
    RECORD_TYPE,
    Decoded,
    UserIdFrom,
    checked_item_metadata,
    decode,
    expiry_for,
    id_hasher,
    index_paths,
    index_signature,
    label_positions,
    user_of,
    user_of_prefix,
)
from oracleagentmemory.integrations._langgraph_filters import namespace_matches, scope_filter
from oracleagentmemory.integrations._langgraph_plans import (
    ListPlan,
    Planner,
    PutPlan,
    SearchPlan,
    check_index,
    check_ttl_config,
)

__all__ = ["AgentMemoryStore"]


def _under_prefix(record: Record, labels: dict[str, str]) -> bool:
    """Whether ``record`` passes this adapter's prefix filter (``scope_filter``'s labels):
    the same test the store's metadata filter makes, on the record's metadata."""
    meta = record.metadata
    info = meta.get(META) if isinstance(meta, dict) else None
    have = info.get("prefix") if isinstance(info, dict) else None
    if not isinstance(have, dict):
        return False
    return all(have.get(i) == label for i, label in labels.items())


class AgentMemoryStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are memories of an ``OracleAgentMemory`` client.

    ``index`` (LangGraph's ``IndexConfig``): ``fields`` to embed (default ``["$"]``, the whole
    value) with the client's embedder; ``embed`` is refused, ``dims`` must equal the
    embedder's. ``ttl`` (``TTLConfig``): ``default_ttl`` minutes and ``refresh_on_read``.
    ``user_id_from``: the namespace position (or a callable of the namespace) that gives an
    item's ``user_id``; ``agent_id`` scopes every item of this store to that agent.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        client: OracleAgentMemory,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        user_id_from: int | Callable[[tuple[str, ...]], str | None] | None = None,
        agent_id: str | None = None,
    ) -> None:
        if not isinstance(client, OracleAgentMemory):
            raise TypeError(f"client must be an OracleAgentMemory, got {type(client).__name__}")
        if user_id_from is not None and (
            isinstance(user_id_from, bool)
            or not (isinstance(user_id_from, int) or callable(user_id_from))
        ):
            raise TypeError("user_id_from must be a namespace position (int), a callable or None")
        if agent_id is not None:
            if not isinstance(agent_id, str) or not agent_id:
                raise TypeError("agent_id must be a non-empty string or None")
            if len(agent_id) > MAX_ID_CHARS:
                raise ValueError(f"agent_id has more than {MAX_ID_CHARS} characters")
        self._client = client
        self._store = client.store
        self._user_id_from: UserIdFrom = user_id_from
        self._agent_id = agent_id
        vector_dim = getattr(self._store, "vector_dim", None)
        self._paths = None if index is None else index_paths(check_index(index, vector_dim))
        self.index_config: IndexConfig | None = (
            None if index is None else cast(IndexConfig, dict(index))
        )
        self.ttl_config: TTLConfig | None = None if ttl is None else check_ttl_config(ttl)
        retention = getattr(self._store, "memory_retention_config", None)
        self._default_days: int | None = getattr(retention, "default_ttl_days", None)
        self._max_days: int | None = getattr(retention, "max_ttl_days", None)
        id_secret = getattr(self._store, "id_secret", None)
        if not callable(id_secret):
            raise TypeError("client.store must be a database store (one with an id_secret)")
        self._planner = Planner(agent_id, user_id_from, self._paths, id_hasher(id_secret()))

    # ------------------------------------------------------------------ batch

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``: every op is validated first, then reads (seeing the store as it was
        before this batch), TTL refreshes, and the writes (last put per key wins)."""
        plans = [self._planner.plan(op) for op in ops]
        results: list[Result] = []
        touched: dict[str, Decoded] = {}
        for plan in plans:
            if isinstance(plan, GetOp):
                results.append(self._get(plan, touched))
            elif isinstance(plan, SearchPlan):
                results.append(self._search(plan, touched))
            elif isinstance(plan, ListPlan):
                results.append(self._list_namespaces(plan))
            else:
                results.append(None)
        if touched:
            self._refresh(touched)
        puts = {(p.namespace, p.key): p for p in plans if isinstance(p, PutPlan)}
        if puts:
            self._write(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))

    # ------------------------------------------------------------------ reads

    def _owns(self, record: Record, namespace: tuple[str, ...]) -> bool:
        """Whether ``record`` may be this store's item of ``namespace``: its user is the one
        the namespace maps to and its agent is this store's. Whoever else wrote a record at
        an item's id, or with metadata naming its namespace, never has it read as the item."""
        if not isinstance(record, ScopedRecord):
            return False
        try:
            user = user_of(self._user_id_from, namespace)
        except (TypeError, ValueError):
            return False
        return record.user_id == user and record.agent_id == self._agent_id

    def _item(self, record: Record | None, namespace: tuple[str, ...], key: str) -> Decoded | None:
        found = None if record is None else decode(record)
        if found is None or found.namespace != namespace or found.key != key:
            return None
        return found if self._owns(cast(Record, record), namespace) else None

    def _find(
        self, namespace: tuple[str, ...], key: str, ids: tuple[str, str] | None = None
    ) -> tuple[tuple[str, Decoded] | None, bool]:
        """(record id, item) of this store's own item at (namespace, key), at its id or, for
        items written before ids were keyed, at the old one; and whether the item's id holds
        a live record that is not its own (then a new item cannot be written there).
        ``ids``: the item's (id, old id) when the caller has them (a put's plan does)."""
        new_id, legacy_id = self._planner.ids(namespace, key) if ids is None else ids
        records = self._store.get_many(RECORD_TYPE, [new_id, legacy_id])
        return self._resolve(namespace, key, new_id, legacy_id, records)

    def _resolve(
        self,
        namespace: tuple[str, ...],
        key: str,
        new_id: str,
        legacy_id: str,
        records: dict[str, Record],
    ) -> tuple[tuple[str, Decoded] | None, bool]:
        """:meth:`_find`'s answer from ``records`` (the live records read at the ids)."""
        record = records.get(new_id)
        found = self._item(record, namespace, key)
        if found is not None:
            return (new_id, found), False
        old = self._item(records.get(legacy_id), namespace, key)
        return (None if old is None else (legacy_id, old)), record is not None

    def _get(self, op: GetOp, touched: dict[str, Decoded]) -> Item | None:
        hit, _ = self._find(op.namespace, op.key)
        if hit is None:
            return None
        record_id, found = hit
        if op.refresh_ttl and found.ttl_minutes is not None:
            touched[record_id] = found
        return Item(
            value=found.value,
            key=found.key,
            namespace=found.namespace,
            created_at=found.created_at,
            updated_at=found.updated_at,
        )

    def _scope(self, prefix: Sequence[str]) -> tuple[str | None, dict[str, Any]]:
        user = user_of_prefix(self._user_id_from, prefix)
        return user, {
            "agent_id": self._agent_id,
            "user_id": NOT_SET_MARKER if user is None else user,
        }

    def _search(self, op: SearchPlan, touched: dict[str, Decoded]) -> list[SearchItem]:
        want = op.offset + op.limit
        if op.limit == 0:
            return []
        user, scope = self._scope(op.prefix)
        flt = scope_filter(op.prefix, values=op.values)
        n = len(op.prefix)
        labels = label_positions(op.prefix)
        # Without a value filter, a VECTOR search first ranks the scope without the prefix
        # filter: when every hit it returns is under the prefix, they are exactly the
        # filtered search's hits (the best k of the scope all pass, so they are the best k
        # of those that pass), without the filter's cost (more candidates ranked and the
        # filter checked on them in SQL). Otherwise the filtered search runs, as always.
        # HYBRID fuses per-branch ranks, which other items would move: always filtered.
        unfiltered_first = (
            not op.values.sql
            and not op.values.checks
            and getattr(self._store, "search_strategy", None) is SearchStrategy.VECTOR
        )

        def store_search(k: int, metadata_filter: dict[str, Any] | None) -> Any:
            return self._store.search(
                op.query,
                k,
                user_id=user,
                agent_id=self._agent_id,
                exact_user_match=user is not None,
                exact_agent_match=True,
                record_types={RECORD_TYPE},
                metadata_filter=metadata_filter,
            )

        def fetch(k: int) -> list[tuple[Record, float | None]]:
            if op.query and self._paths is not None:
                hits = None
                if unfiltered_first:
                    hits = store_search(k, None)
                    if not all(_under_prefix(record, labels) for record, _ in hits):
                        hits = None
                if hits is None:
                    hits = store_search(k, flt)
                return [(record, 1.0 - dist) for record, dist in hits]
            rows = self._store.list(RECORD_TYPE, limit=k, metadata_filter=flt, **scope)
            return [(record, None) for record in reversed(rows)]

        cap = MAX_SEARCH_RESULTS if op.query and self._paths is not None else MAX_LIST_ROWS
        k = want if not op.values.checks else min(cap, max(2 * want, 32))
        while True:
            rows = fetch(k)
            kept: list[tuple[Decoded, str, float | None]] = []
            for record, score in rows:
                found = decode(record)
                if (
                    found is not None
                    and found.namespace[:n] == op.prefix
                    and self._owns(record, found.namespace)
                    and op.values.matches(found.value)
                ):
                    kept.append((found, record.id, score))
            if len(kept) >= want or len(rows) < k or k >= cap:
                break
            k = min(cap, 4 * k)
        out = []
        for found, record_id, score in kept[op.offset : want]:
            if op.refresh and found.ttl_minutes is not None:
                touched[record_id] = found
            out.append(
                SearchItem(
                    namespace=found.namespace,
                    key=found.key,
                    value=found.value,
                    created_at=found.created_at,
                    updated_at=found.updated_at,
                    score=score,
                )
            )
        return out

    def _list_namespaces(self, op: ListPlan) -> list[tuple[str, ...]]:
        prefix = next((p for t, p in op.conditions if t == "prefix"), ())
        suffix = next((p for t, p in op.conditions if t == "suffix"), ())
        _, scope = self._scope(prefix)
        rows = self._store.list(
            RECORD_TYPE, limit=None, metadata_filter=scope_filter(prefix, suffix), **scope
        )
        found = {
            d.namespace for r in rows if (d := decode(r)) is not None and self._owns(r, d.namespace)
        }
        matching = [
            ns for ns in found if all(namespace_matches(ns, p, t) for t, p in op.conditions)
        ]
        if op.max_depth is not None:
            matching = list({ns[: op.max_depth] for ns in matching})
        return sorted(matching)[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------------ writes

    def _expiry_fields(self, ttl: float | None, now: datetime) -> dict[str, Any]:
        exp = expiry_for(ttl, self._max_days, now)
        if exp.anchored:
            return {
                "timestamp": exp.timestamp,
                "ttl_days": exp.ttl_days,
                "ttl_anchor": TimeToLiveAnchor.TIMESTAMP,
            }
        return {
            "timestamp": None,
            "ttl_days": self._default_days,
            "ttl_anchor": TimeToLiveAnchor.CREATED_AT,
        }

    def _refresh(self, touched: dict[str, Decoded]) -> None:
        """Move the expiry of items read with ``refresh_ttl`` to their TTL from now."""
        now = datetime.now(UTC)
        for record_id, found in touched.items():
            fields = self._expiry_fields(found.ttl_minutes, now)
            self._store.update(RECORD_TYPE, record_id, **fields)

    @staticmethod
    def _index_text(texts: list[str]) -> str | list[str]:
        """One text is the store's to chunk; several are one retrieval row each."""
        return texts[0] if len(texts) == 1 else texts

    def _write(self, puts: list[PutPlan], *, retried: bool = False) -> None:
        now = datetime.now(UTC)
        stamp = now.isoformat()
        # Every id of the batch (keyed and legacy) read in one query.
        records = self._store.get_many(
            RECORD_TYPE, [i for p in puts for i in (p.record_id, p.legacy_id)]
        )
        found = [self._resolve(p.namespace, p.key, p.record_id, p.legacy_id, records) for p in puts]
        for put, (hit, taken) in zip(puts, found, strict=True):
            if put.value is not None and hit is None and taken:
                raise ValueError(
                    f"key {put.key!r} in namespace {put.namespace}: the item's record id holds "
                    "a record this store did not write; nothing of the batch's writes was done"
                )
        new: list[tuple[PutPlan, dict[str, Any], dict[str, Any], str | None]] = []
        for put, (hit, _) in zip(puts, found, strict=True):
            if put.value is None:
                if hit is not None:
                    self._store.delete(RECORD_TYPE, hit[0])
                continue
            record_id, old = (put.record_id, None) if hit is None else hit
            signature = index_signature(put.texts) if put.texts else None
            meta = checked_item_metadata(
                put.namespace,
                put.key,
                put.value,
                put.content,
                created_at=stamp if old is None else old.created_at.isoformat(),
                updated_at=stamp,
                ttl_minutes=put.ttl,
                signature=signature,
            )
            fields = self._expiry_fields(put.ttl, now)
            if old is None:
                new.append((put, meta, fields, put.user))
                continue
            if old.content != put.content or old.signature != signature:
                fields["content"] = put.content
                fields["index_text"] = self._index_text(put.texts)
            self._store.update(RECORD_TYPE, record_id, metadata=meta, **fields)
        if new:
            self._add(new, retried)

    def _add(
        self,
        new: list[tuple[PutPlan, dict[str, Any], dict[str, Any], str | None]],
        retried: bool,
    ) -> None:
        """Add the new items in one transaction. On an id clash, once: a leftover expired
        row of the same id, not purged yet, is deleted, and the items are written again as
        they now stand (one written meanwhile by this store is updated; by anyone else,
        refused)."""
        batch = PendingRecordBatch(
            contents=[p.content for p, _, _, _ in new],
            record_type=RECORD_TYPE,
            record_ids=[p.record_id for p, _, _, _ in new],
            index_texts=[self._index_text(p.texts) for p, _, _, _ in new],
            user_ids=[u for _, _, _, u in new],
            agent_ids=self._agent_id,
            metadata=[m for _, m, _, _ in new],
            timestamps=[f["timestamp"] for _, _, f, _ in new],
            ttl_days=[f["ttl_days"] for _, _, f, _ in new],
            ttl_anchor=[f["ttl_anchor"] for _, _, f, _ in new],
        )
        try:
            self._store.add_batches([batch])
        except ValueError as exc:
            if retried or "already exists" not in str(exc):
                raise
            for put, _, _, _ in new:
                if self._store.get(RECORD_TYPE, put.record_id) is None:
                    self._store.delete(RECORD_TYPE, put.record_id)
            self._write([put for put, _, _, _ in new], retried=True)
