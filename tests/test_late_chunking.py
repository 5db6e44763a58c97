"""Late-chunked message vectors (the default embedder's ``embed_run``): segments, what a
several-message write stores under ``late_chunked`` (the bulk import's) and without it (every
other write: pair windows), and that a deleted message leaves no trace in the vectors of the
messages whose segments held it. Both engines, the bundled model."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.admin.conversations import ThreadInput, import_conversations
from oracleagentmemory.core._client.messages._message_batch import late_chunked
from oracleagentmemory.core.embedders._late_chunking import GROUP, REACH, segments
from oracleagentmemory.core.store.schema._rows import KEYWORD_ROW_INDEX

TEXTS = [
    f"{who}: {line}"
    for who, line in [
        ("Caroline", "I went to the support group on Tuesday."),
        ("Melanie", "How did it go? Was it the one downtown?"),
        ("Caroline", "Yes, it went well, everyone was kind."),
        ("Melanie", "That's great. I painted a sunrise over the lake last week."),
        ("Caroline", "qzcanarylate I would love to see it, send me a photo."),
        ("Melanie", "Sure! I also signed the kids up for swimming lessons."),
        ("Caroline", "When do they start?"),
        ("Melanie", "In May, on Saturdays."),
        ("Caroline", "I am thinking about adopting a dog this summer."),
        ("Melanie", "A puppy or an older one?"),
    ]
]


def test_segments_overlap_by_one_and_respect_the_limit() -> None:
    assert GROUP == 4
    assert segments([5] * 10, 100, True) == [(0, 4, True), (3, 7, False), (6, 10, False)]
    # Opened by the thread's previous message: context only.
    assert segments([5] * 5, 100, False) == [(0, 4, False), (3, 5, False)]
    # Too long for a segment with the next: the next starts afresh (owning its first);
    # a message over the limit (or empty) is in none.
    assert segments([60, 50, 5, 200, 0, 5, 5], 100, True) == [
        (0, 1, True),
        (1, 3, True),
        (5, 7, True),
    ]


def test_embed_run_vectors_depend_only_on_their_segment(local_embedder: Any) -> None:
    vecs = local_embedder.embed_run(TEXTS)
    assert all(v is not None and abs(float(np.linalg.norm(v)) - 1) < 1e-5 for v in vecs)
    # Opened by the message before: the same vectors for the messages after it.
    tail = local_embedder.embed_run(TEXTS[1:], TEXTS[0])
    np.testing.assert_allclose(np.stack(tail), np.stack(vecs[1:]), atol=1e-6)
    # Another text for message 4 moves only vectors within REACH of it.
    other = local_embedder.embed_run([*TEXTS[:4], "Caroline: something else.", *TEXTS[5:]])
    moved = [i for i in range(len(TEXTS)) if not np.allclose(other[i], vecs[i], atol=1e-6)]
    assert moved and all(abs(i - 4) <= REACH for i in moved)
    with pytest.raises(TypeError):
        local_embedder.embed_run("one text")


def _vectors(client: Any, thread_id: str) -> dict[str, list[tuple[str, np.ndarray]]]:
    """Each message's (chunk text, vector) rows, keyword-only rows left out."""
    d = client.store._dialect
    t = d.tables
    rows = d.execute(
        f"SELECT r.id, c.chunk_index, c.chunk_text, {d.vector_read_sql('c.vector')}"
        f" FROM {t.chunks} c JOIN {t.records} r ON r.rid = c.rid{d.joined('r', 'c')}"
        " WHERE r.thread_id = ? ORDER BY r.seq_no, c.chunk_index",
        [thread_id],
    )
    out: dict[str, list[tuple[str, np.ndarray]]] = {}
    for rid, index, text, blob in rows:
        if index != KEYWORD_ROW_INDEX:
            out.setdefault(rid, []).append((text, d.vectors_from_db([blob], 384)[0]))
    return out


def test_a_list_of_messages_is_late_chunked_and_one_message_keeps_its_window(
    spec_client: Any, local_embedder: Any
) -> None:
    thread = spec_client.create_thread(thread_id="t1", user_id="u1")
    with late_chunked():
        ids = thread.add_messages([{"role": "user", "content": x} for x in TEXTS[:6]])
    late = local_embedder.embed_run(TEXTS[:6])
    stored = _vectors(spec_client, "t1")
    for i, mid in enumerate(ids):
        ((text, vec),) = stored[mid]
        assert text == (TEXTS[i] if i == 0 else f"{TEXTS[i - 1]}\n{TEXTS[i]}")  # rows' text
        np.testing.assert_allclose(vec, late[i], atol=1e-5)
    # A later call of several: opened by the thread's last message.
    with late_chunked():
        more = thread.add_messages([{"role": "user", "content": x} for x in TEXTS[6:8]])
    after = local_embedder.embed_run(TEXTS[6:8], TEXTS[5])
    for mid, v in zip(more, after, strict=True):
        np.testing.assert_allclose(_vectors(spec_client, "t1")[mid][0][1], v, atol=1e-5)
    # One message alone: today's window vector.
    (one,) = thread.add_messages([{"role": "user", "content": TEXTS[8]}])
    window = f"{TEXTS[7]}\n{TEXTS[8]}"
    np.testing.assert_allclose(
        _vectors(spec_client, "t1")[one][0][1], local_embedder.embed([window])[0], atol=1e-5
    )


def _pair_windows(texts: list[str], embedder: Any) -> Any:
    windows = [texts[0], *(f"{a}\n{b}" for a, b in itertools.pairwise(texts))]
    return embedder.embed(windows)


def test_outside_the_import_a_list_of_messages_keeps_its_pair_windows(
    spec_client: Any, local_embedder: Any
) -> None:
    thread = spec_client.create_thread(thread_id="t1", user_id="u1")
    ids = thread.add_messages([{"role": "user", "content": x} for x in TEXTS[:6]])
    stored = _vectors(spec_client, "t1")
    pair = _pair_windows(TEXTS[:6], local_embedder)
    late = local_embedder.embed_run(TEXTS[:6])
    for i, mid in enumerate(ids):
        ((_, vec),) = stored[mid]
        np.testing.assert_allclose(vec, pair[i], atol=1e-5)
    assert not np.allclose(np.stack([stored[m][0][1] for m in ids[1:]]), np.stack(late[1:]))


@pytest.mark.parametrize("late", [True, False])
def test_the_conversation_import_late_chunks_unless_told_not_to(
    spec_client: Any, local_embedder: Any, late: bool
) -> None:
    threads = [ThreadInput("t1", "u1", None, [{"role": "user", "content": x} for x in TEXTS])]
    (tid,) = import_conversations(spec_client, threads, late_chunking=late)
    stored = _vectors(spec_client, tid)
    got = np.stack([rows[0][1] for rows in stored.values()])
    want = local_embedder.embed_run(TEXTS) if late else _pair_windows(TEXTS, local_embedder)
    np.testing.assert_allclose(got, np.stack(want), atol=1e-5)


def test_a_delete_re_embeds_only_late_chunked_neighbours(
    spec_client: Any, local_embedder: Any
) -> None:
    """Vectors that were not late-chunked never held a neighbour: a delete leaves them (a
    caller's own vectors included), and re-embeds only the pair windows that held its text."""
    thread = spec_client.create_thread(thread_id="t1", user_id="u1")
    rng = np.random.default_rng(7)
    own = rng.standard_normal((6, 384)).astype(np.float32)
    own /= np.linalg.norm(own, axis=1, keepdims=True)
    ids = thread.add_messages(
        [{"role": "user", "content": x} for x in TEXTS[:6]], embeddings=list(own)
    )
    calls: list[int] = []
    embed = local_embedder.embed

    def counting(texts: list[str], **kw: Any) -> Any:
        calls.append(len(texts))
        return embed(texts, **kw)

    local_embedder.embed = counting
    try:
        assert thread.delete_message(ids[2]) == 1
    finally:
        del local_embedder.embed
    after = _vectors(spec_client, "t1")
    for i in (0, 1, 5):  # beyond the windows that held message 2's text: the caller's
        np.testing.assert_allclose(after[ids[i]][0][1], own[i], atol=1e-6)
    assert sum(calls) <= 2  # messages 3 and 4 (their windows held it), as before
    # The mark lives in the record's extra only: the messages read as written.
    assert [m.content for m in thread.get_messages()] == [TEXTS[i] for i in (0, 1, 3, 4, 5)]


def test_a_deleted_message_leaves_no_trace_in_its_segments_vectors(
    spec_client: Any, local_embedder: Any
) -> None:
    thread = spec_client.create_thread(thread_id="t1", user_id="u1")
    with late_chunked():
        ids = thread.add_messages([{"role": "user", "content": x} for x in TEXTS])
    gone = 4
    assert "qzcanarylate" in TEXTS[gone]
    before = _vectors(spec_client, "t1")
    assert thread.delete_message(ids[gone]) == 1
    after = _vectors(spec_client, "t1")
    assert ids[gone] not in after
    # The late vectors with another text in its place: only those within REACH change, so
    # every vector outside it holds nothing of the deleted message.
    swapped = local_embedder.embed_run([*TEXTS[:gone], "Caroline: other.", *TEXTS[gone + 1 :]])
    for i, mid in enumerate(ids):
        if i == gone:
            continue
        rows = after[mid]
        if abs(i - gone) > REACH:
            np.testing.assert_allclose(rows[0][1], before[mid][0][1], atol=1e-6)
            np.testing.assert_allclose(rows[0][1], swapped[i], atol=1e-5)
            continue
        # Within reach: each vector is the embedder's of its row's text, which lacks it.
        for text, vec in rows:
            assert "qzcanarylate" not in text
            np.testing.assert_allclose(vec, local_embedder.embed([text])[0], atol=1e-5)
    hits = thread.search("adopting a dog this summer", max_results=3)
    assert ids[8] in [h.id for h in hits]


def test_an_export_with_vectors_keeps_the_mark_so_the_copys_deletes_re_derive(
    tmp_path: Any, local_embedder: Any
) -> None:
    """``oam export --vectors`` carries late-chunked vectors as they were and marks them; the
    copy's deletes then re-derive its neighbours as the original's would."""
    from oracleagentmemory.cli import main
    from oracleagentmemory.core import OracleAgentMemory

    src, dst, out = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "x.jsonl"
    with OracleAgentMemory(connection=str(src), embedder=local_embedder) as a:
        threads = [ThreadInput("t1", "u1", None, [{"role": "user", "content": x} for x in TEXTS])]
        import_conversations(a, threads)
        before = _vectors(a, "t1")
    assert main(["export", "--dsn", str(src), "--out", str(out), "--vectors"]) == 0
    lines = [line for line in out.read_text().splitlines() if '"message"' in line]
    assert sum('"late_vector": true' in line for line in lines) == len(TEXTS)
    assert main(["import", "--dsn", str(dst), str(out)]) == 0
    with OracleAgentMemory(connection=str(dst), embedder=local_embedder) as b:
        copy = _vectors(b, "t1")
        ids = list(copy)
        for mid in ids:  # restored as they were
            np.testing.assert_allclose(copy[mid][0][1], before[mid][0][1], atol=1e-6)
        assert b.get_thread("t1").delete_message(ids[4]) == 1
        after = _vectors(b, "t1")
    for i, mid in enumerate(ids):
        if i == 4:
            continue
        if abs(i - 4) <= REACH:  # re-derived from their rows' texts, which lack it
            ((text, vec),) = after[mid]
            np.testing.assert_allclose(vec, local_embedder.embed([text])[0], atol=1e-5)
        else:
            np.testing.assert_allclose(after[mid][0][1], copy[mid][0][1], atol=1e-6)
