"""Seeded synthetic corpus for the speed benchmark: structured vectors, short texts, metadata.

Vectors are not uniform noise (on which every graph index scores recall@10 ~0.1, which says
nothing about real use): each record belongs to one of ``TOPICS`` clusters laid out in a
``LATENT_DIM``-dimensional latent space, is scattered around its cluster centre there, lifted
to 384 dimensions by a fixed random orthonormal map, and gets a little isotropic noise in all
384 dimensions before L2 normalisation. The intrinsic dimension is therefore about 32, as with
real sentence embeddings.

Texts come from word lists: each topic owns a vocabulary (nouns, verbs, adjectives sampled
from the lists below, overlapping between topics as real vocabularies do), and a record's
text is a short templated sentence using its topic's words, a person's name and common
function words, so keyword search sees real terms with realistic document frequencies.

Queries: near-duplicates of stored records (vector plus noise, text with words dropped) and
fresh points drawn from the clusters (new vector, new question-like text).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

DIM = 384
LATENT_DIM = 32
TOPICS = 200
USERS = 100
SOURCES = ("chat", "email", "note", "calendar")


def _words(text: str) -> list[str]:
    return text.split()


TAGS = (
    "work", "family", "health", "travel", "finance", "food",
    "sport", "music", "home", "school", "shopping", "friends",
)  # fmt: skip

NOUNS = _words("""
account address airport apartment appointment article baby bag bakery bank battery beach bed
bicycle bill birthday blanket boat book bottle breakfast bridge brother budget bus cabinet cake
camera camp car card career carpet castle cat chair cheese chef child chocolate church city
class client clinic coat coffee colleague computer concert contract cookie couch cousin
customer dentist desk dinner doctor dog door dress driver editor email engine exam family farm
festival film flight flower football friend furniture garage garden gift guitar gym haircut
hike holiday hospital hotel house insurance interview invoice island jacket job journal kitchen
laptop lawyer lecture letter library license lunch manager market meeting menu message mortgage
mountain movie museum neighbor newsletter nurse office package painting paper park party
passport payment pharmacy phone photo piano picnic pizza plan plant playlist podcast present
printer project promotion puppy recipe refund rent report reservation restaurant resume river
roof salary salad sandwich scholarship school sister soccer sofa song speech station student
subscription suitcase supplier surgery sweater table tax teacher team tennis test ticket train
trip truck umbrella university vacation vet video village violin visa wallet wedding weekend
window workshop yoga
""")
VERBS = _words("""
booked bought built called cancelled changed checked cleaned collected cooked delivered
discussed emailed enjoyed finished fixed found gave hated joined left liked lost loved mentioned
missed moved needed ordered organised packed painted paid planned posted practised prepared
promised read recommended renewed repaired returned reviewed scheduled sent shared signed sold
started submitted took tried updated visited wanted watched wrote
""")
ADJECTIVES = _words("""
annual awkward beautiful big blue bright broken busy cheap classic cold comfortable cosy crowded
delicious early easy expensive famous fancy favourite free fresh friendly funny green heavy
huge important late local long loud lovely lucky modern new noisy old overdue perfect pink
quiet quick red relaxing rainy second short small spicy strange sunny tiny urgent vegan warm
weekly wonderful wooden yellow young
""")
NAMES = _words("""
Alice Ben Carla David Elena Farid Grace Hiro Ines Jamal Kira Liam Maya Noah Olga Pedro Quinn
Rosa Sam Tara Umar Vera Wes Xena Yusuf Zoe
""")
WHEN = (
    "yesterday",
    "today",
    "tomorrow",
    "tonight",
    "on Monday",
    "on Tuesday",
    "on Wednesday",
    "on Thursday",
    "on Friday",
    "on Saturday",
    "on Sunday",
    "last week",
    "next week",
    "this morning",
    "in March",
    "in April",
    "in May",
    "in June",
    "in July",
    "in August",
    "in September",
    "after work",
    "before lunch",
)
PREPS = ("for", "with", "near", "about", "at", "from", "after", "before")

TEMPLATES = (
    "{name} {verb} the {adj} {noun} {when}",
    "I {verb} a {adj} {noun} {prep} the {noun2}",
    "Remember that {name} prefers the {adj} {noun} {prep} the {noun2}",
    "We {verb} the {noun} and the {noun2} {when}",
    "Note to self: the {noun} {prep} the {adj} {noun2} is {adj2}",
    "{name} said the {noun2} was {adj} and {verb} the {noun} {when}",
    "Need to check the {adj} {noun} {prep} {name} {when}",
    "The {noun} {prep} the {noun2} was {adj} so I {verb} another {noun3}",
)
QUESTION_TEMPLATES = (
    "what did {name} say about the {noun}",
    "tell me when {name} {verb} the {adj} {noun}",
    "which {noun} {prep} the {noun2} did we choose",
    "do you remember the {adj} {noun} {prep} the {noun2}",
    "where is the {noun} that {name} {verb}",
)


@dataclass
class Corpus:
    """N records and two query sets, all as plain arrays and lists (picklable, savable)."""

    vectors: NDArray[np.float32]  # (N, DIM), L2-normalised
    users: NDArray[np.int32]  # (N,) user index 0..USERS-1
    topics: NDArray[np.int32]  # (N,)
    texts: list[str]
    metadata: list[dict[str, Any]]
    timestamps: list[str]
    # queries: near-duplicates first, then fresh points
    q_vectors: NDArray[np.float32]
    q_texts: list[str]
    q_users: NDArray[np.int32]
    q_kind: list[str]  # "near-dup" | "fresh"
    q_src: NDArray[np.int64]  # the stored record a near-duplicate was made from; -1 for fresh

    @property
    def n(self) -> int:
        return int(self.vectors.shape[0])

    def user_id(self, u: int) -> str:
        return f"user{u:03d}"

    def record_id(self, i: int) -> str:
        return f"r{i}"

    def add_rows(
        self, store: Any, s: int, e: int, *, id_prefix: str = "r", timestamps: bool = True
    ) -> None:
        """``store.add`` of rows ``s:e`` in one batch: their texts, vectors, ids
        (``<id_prefix><i>``), users, metadata and (unless ``timestamps`` is False) timestamps."""
        extra = {"timestamps": self.timestamps[s:e]} if timestamps else {}
        store.add(
            self.texts[s:e],
            record_type="memory",
            embeddings=list(np.asarray(self.vectors[s:e])),
            record_ids=[f"{id_prefix}{i}" for i in range(s, e)],
            user_ids=[self.user_id(u) for u in self.users[s:e].tolist()],
            metadata=self.metadata[s:e],
            batch_size=e - s,
            **extra,
        )


class _Model:
    """The generative model shared by records and queries (seeded, deterministic)."""

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.rng = rng
        basis, _ = np.linalg.qr(rng.standard_normal((DIM, LATENT_DIM)))
        self.lift = basis.T.astype(np.float64)  # (LATENT_DIM, DIM), orthonormal rows
        self.centres = rng.standard_normal((TOPICS, LATENT_DIM))
        # Cluster spread: some topics tight, some broad.
        self.spread = rng.uniform(0.35, 0.8, TOPICS)
        self.noise = 0.15  # isotropic 384-d noise, relative to the latent part
        self.vocab = [
            (
                list(rng.choice(NOUNS, 24, replace=False)),
                list(rng.choice(VERBS, 8, replace=False)),
                list(rng.choice(ADJECTIVES, 8, replace=False)),
            )
            for _ in range(TOPICS)
        ]
        # Each user talks mostly about a few favourite topics.
        self.user_topics = [rng.choice(TOPICS, 12, replace=False) for _ in range(USERS)]
        self.user_weights = rng.dirichlet(np.ones(12) * 0.7, USERS)

    def vectors(self, topics: NDArray[np.int32], rng: np.random.Generator) -> NDArray[np.float32]:
        n = topics.shape[0]
        out = np.empty((n, DIM), dtype=np.float32)
        step = 65536
        for s in range(0, n, step):
            t = topics[s : s + step]
            latent = self.centres[t] + rng.standard_normal((t.size, LATENT_DIM)) * self.spread[
                t, None
            ] * np.sqrt(LATENT_DIM / 8)
            v = latent @ self.lift
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            v += rng.standard_normal((t.size, DIM)) * (self.noise / np.sqrt(DIM))
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            out[s : s + t.size] = v
        return out

    def texts(
        self, topics: NDArray[np.int32], rng: np.random.Generator, question: bool = False
    ) -> list[str]:
        """One short sentence per topic id, from that topic's vocabulary (vectorised draws)."""
        n = topics.shape[0]
        templates = QUESTION_TEMPLATES if question else TEMPLATES
        draw: dict[str, Any] = {
            "tpl": rng.integers(0, len(templates), n),
            "name": rng.integers(0, len(NAMES), n),
            "verb": rng.integers(0, 8, n),
            "adj": rng.integers(0, 8, n),
            "adj2": rng.integers(0, 8, n),
            "n1": rng.integers(0, 24, n),
            "n2": rng.integers(1, 12, n),
            "n3": rng.integers(12, 23, n),
            "prep": rng.integers(0, len(PREPS), n),
            "when": rng.integers(0, len(WHEN), n),
        }
        cols: dict[str, list[int]] = {k: v.tolist() for k, v in draw.items()}
        out: list[str] = []
        for i, t in enumerate(topics.tolist()):
            nouns, verbs, adjs = self.vocab[t]
            n1 = cols["n1"][i]
            out.append(
                templates[cols["tpl"][i]].format(
                    name=NAMES[cols["name"][i]],
                    verb=verbs[cols["verb"][i]],
                    adj=adjs[cols["adj"][i]],
                    adj2=adjs[cols["adj2"][i]],
                    noun=nouns[n1],
                    noun2=nouns[(n1 + cols["n2"][i]) % 24],
                    noun3=nouns[(n1 + cols["n3"][i]) % 24],
                    prep=PREPS[cols["prep"][i]],
                    when=WHEN[cols["when"][i]],
                )
                + ("?" if question else "")
            )
        return out


def generate(n: int, n_queries: int = 200, seed: int = 7) -> Corpus:
    """``n`` records for ``USERS`` users and ``n_queries`` queries per kind (2 kinds)."""
    model = _Model(seed)
    rng = np.random.default_rng(seed + 1)
    users = rng.integers(0, USERS, n).astype(np.int32)
    topics = np.empty(n, dtype=np.int32)
    for u in range(USERS):
        idx = np.flatnonzero(users == u)
        topics[idx] = rng.choice(model.user_topics[u], idx.size, p=model.user_weights[u])
    vectors = model.vectors(topics, rng)
    texts = model.texts(topics, rng)
    start = np.datetime64("2025-01-01T00:00:00")
    secs = np.sort(rng.integers(0, 365 * 86400, n))
    timestamps = (start + secs.astype("timedelta64[s]")).astype(str).tolist()
    src = rng.integers(0, len(SOURCES), n)
    ntags = rng.integers(1, 4, n)
    tag_draw = rng.integers(0, len(TAGS), (n, 3)).tolist()
    prio = rng.integers(0, 3, n).tolist()
    metadata = [
        {
            "source": SOURCES[s],
            "tags": sorted({TAGS[j] for j in tag_draw[i][:k]}),
            "priority": prio[i],
        }
        for i, (s, k) in enumerate(zip(src.tolist(), ntags.tolist(), strict=True))
    ]

    # Near-duplicates: stored vectors plus noise (cosine ~0.95 to their source), text with
    # a couple of words dropped. Fresh points: new draws from a random user's topics.
    qrng = np.random.default_rng(seed + 2)
    src_idx = qrng.choice(n, n_queries, replace=False)
    dup = vectors[src_idx].astype(np.float64)
    dup += qrng.standard_normal(dup.shape) * (0.33 / np.sqrt(DIM))
    dup /= np.linalg.norm(dup, axis=1, keepdims=True)
    dup_texts = [_drop_words(texts[i], qrng) for i in src_idx]
    f_users = qrng.integers(0, USERS, n_queries).astype(np.int32)
    f_topics = np.array(
        [qrng.choice(model.user_topics[u], p=model.user_weights[u]) for u in f_users],
        dtype=np.int32,
    )
    fresh = model.vectors(f_topics, qrng)
    fresh_texts = model.texts(f_topics, qrng, question=True)
    q_texts = _unique(dup_texts + fresh_texts)
    return Corpus(
        vectors=vectors,
        users=users,
        topics=topics,
        texts=texts,
        metadata=metadata,
        timestamps=timestamps,
        q_vectors=np.vstack([dup.astype(np.float32), fresh]),
        q_texts=q_texts,
        q_users=np.concatenate([users[src_idx], f_users]).astype(np.int32),
        q_kind=["near-dup"] * n_queries + ["fresh"] * n_queries,
        q_src=np.concatenate([src_idx, np.full(n_queries, -1)]).astype(np.int64),
    )


def _unique(texts: list[str]) -> list[str]:
    """Make query texts distinct (a text-keyed embedder double maps each to its vector)."""
    seen: set[str] = set()
    out = []
    for t in texts:
        while t in seen:
            t += " again"
        seen.add(t)
        out.append(t)
    return out


def _drop_words(text: str, rng: np.random.Generator) -> str:
    words = text.split()
    if len(words) > 4:
        for _ in range(2):
            del words[int(rng.integers(len(words)))]
    return " ".join(words)


def save(corpus: Corpus, folder: Path) -> None:
    """Write the corpus so worker processes can memory-map it."""
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "vectors.npy", corpus.vectors)
    np.save(folder / "users.npy", corpus.users)
    np.save(folder / "topics.npy", corpus.topics)
    np.save(folder / "q_vectors.npy", corpus.q_vectors)
    np.save(folder / "q_users.npy", corpus.q_users)
    np.save(folder / "q_src.npy", corpus.q_src)
    with open(folder / "text.json", "w") as f:
        json.dump(
            {
                "texts": corpus.texts,
                "metadata": corpus.metadata,
                "timestamps": corpus.timestamps,
                "q_texts": corpus.q_texts,
                "q_kind": corpus.q_kind,
            },
            f,
        )


def load(folder: Path, mmap: bool = True) -> Corpus:
    mode: Any = "r" if mmap else None
    with open(folder / "text.json") as f:
        t = json.load(f)
    return Corpus(
        vectors=np.load(folder / "vectors.npy", mmap_mode=mode),
        users=np.load(folder / "users.npy"),
        topics=np.load(folder / "topics.npy"),
        texts=t["texts"],
        metadata=t["metadata"],
        timestamps=t["timestamps"],
        q_vectors=np.load(folder / "q_vectors.npy"),
        q_texts=t["q_texts"],
        q_users=np.load(folder / "q_users.npy"),
        q_kind=t["q_kind"],
        q_src=np.load(folder / "q_src.npy"),
    )


def exact_topk(
    matrix: NDArray[np.float32],
    queries: NDArray[np.float32],
    k: int,
    rows: list[NDArray[np.int64]] | None = None,
) -> list[NDArray[np.int64]]:
    """Exact cosine top-k in float64 (the ground truth), optionally within row subsets."""
    out: list[NDArray[np.int64]] = []
    if rows is None:
        best = np.full((queries.shape[0], k), -np.inf)
        best_idx = np.zeros((queries.shape[0], k), dtype=np.int64)
        q64 = queries.astype(np.float64)
        step = 131072
        for s in range(0, matrix.shape[0], step):
            block = np.asarray(matrix[s : s + step], dtype=np.float64)
            sims = q64 @ block.T
            cand = np.concatenate([best, sims], axis=1)
            cidx = np.concatenate(
                [best_idx, np.broadcast_to(np.arange(s, s + block.shape[0]), sims.shape)], axis=1
            )
            part = np.argpartition(-cand, k - 1, axis=1)[:, :k]
            best = np.take_along_axis(cand, part, 1)
            best_idx = np.take_along_axis(cidx, part, 1)
        return [best_idx[i] for i in range(queries.shape[0])]
    for q, sub in zip(queries, rows, strict=True):
        sims = np.asarray(matrix[sub], dtype=np.float64) @ q.astype(np.float64)
        kk = min(k, sub.size)
        part = np.argpartition(-sims, kk - 1)[:kk]
        out.append(sub[part])
    return out


def self_check() -> dict[str, float]:
    """Structure figures that show the vectors are not uniform noise."""
    c = generate(20000, n_queries=100, seed=3)
    sims = c.vectors[:2000] @ c.vectors[:2000].T
    np.fill_diagonal(sims, 0)
    same = c.topics[:2000, None] == c.topics[None, :2000]
    sv = np.linalg.svd(c.vectors[:5000] - c.vectors[:5000].mean(0), compute_uv=False) ** 2
    return {
        "mean_cos_same_topic": float(sims[same].mean()),
        "mean_cos_other_topic": float(sims[~same].mean()),
        "variance_in_top32_dims": float(sv[:32].sum() / sv.sum()),
        "near_dup_cos_to_source": float(np.mean(np.max(c.q_vectors[:100] @ c.vectors.T, axis=1))),
    }


if __name__ == "__main__":
    print(self_check())
    c = generate(10, n_queries=3)
    for t in c.texts + c.q_texts:
        print(t)


# ---------------------------------------------------------------------------- filters, truth

FILTER_SOURCE: dict[str, Any] = {"source": "email"}
FILTER_TAG: dict[str, Any] = {"tags": {"$array_contains": "work"}}


def filter_masks(corpus: Corpus) -> dict[str, NDArray[np.bool_]]:
    """Boolean columns equal to the metadata filters above (what the floor scans with)."""
    return {
        "source": np.array([m["source"] == "email" for m in corpus.metadata], dtype=np.bool_),
        "tag": np.array(["work" in m["tags"] for m in corpus.metadata], dtype=np.bool_),
    }


SCOPES = ("unscoped", "user", "source", "user+tag")
"""Ground-truth scopes: none; the query's user; metadata source = email; user and tag work."""


def scope_rows(corpus: Corpus, scope: str, qi: int, masks: dict[str, Any]) -> Any:
    u = corpus.q_users[qi]
    if scope == "user":
        return np.flatnonzero(corpus.users == u)
    if scope == "source":
        return np.flatnonzero(masks["source"])
    if scope == "user+tag":
        return np.flatnonzero((corpus.users == u) & masks["tag"])
    raise ValueError(scope)


def ground_truth(corpus: Corpus, k: int = 10) -> dict[str, NDArray[np.int64]]:
    """Exact float64 top-k row indices per query and scope, padded with -1."""
    masks = filter_masks(corpus)
    nq = corpus.q_vectors.shape[0]
    out: dict[str, NDArray[np.int64]] = {}
    for scope in SCOPES:
        if scope == "unscoped":
            res = exact_topk(corpus.vectors, corpus.q_vectors, k)
        elif scope == "source":
            rows = np.flatnonzero(masks["source"])
            sub = exact_topk(np.asarray(corpus.vectors[rows]), corpus.q_vectors, k)
            res = [rows[r] for r in sub]
        else:
            rows_list = [scope_rows(corpus, scope, qi, masks) for qi in range(nq)]
            res = exact_topk(corpus.vectors, corpus.q_vectors, k, rows_list)
        arr = np.full((nq, k), -1, dtype=np.int64)
        for i, r in enumerate(res):
            arr[i, : len(r)] = r
        out[scope] = arr
    return out
