"""Training pairs from the corpus's own structure: judgments people made, not labels lectio made.

A commentator files each comment under the verses it expounds, and an editor gave each pericope
its title: each is a query about a known set of verses. A pair is that query, the scripture chunk
inside those verses that lectio's vector retriever ranks first for it (the positive: of a
twenty-verse range, the passage the comment's words are about, where a verse drawn at random is
often not), and scripture chunks the same ranking puts close to the query that are about other
verses (hard negatives). A query whose verses the ranking's first 1,000 do not reach is left out:
its words do not say which of its verses they mean. A negative never shares a chapter with the
query's verses: commentators and titles often speak of a verse's neighbours too, and a relevant
passage taught as wrong would teach the model the opposite of the truth.

Every pair is admitted by lectio.training.guard, and its split is fixed by its verses' book:
HELD_OUT books make the validation split, so every training decision is judged on books the model
never trained on. Everything is deterministic given the seed.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from lectio.bible.books import BOOKS
from lectio.rulesets.textsplit import sentences
from lectio.training.guard import Guard

# Every sixth book of the canon (Joshua, 2 Kings, Job, Jeremiah, Amos, Zephaniah, Luke,
# Galatians, 1 Timothy, 1 Peter, Revelation): law, history, wisdom, prophets, gospel and letters
# in both testaments.
HELD_OUT = frozenset(book.id for number, book in enumerate(BOOKS, start=1) if number % 6 == 0)
# A comment on more verses than this is about too much for any one passage to answer it.
MAX_REFS = 20
# A commentary query is the opening run of the entry's sentences, up to this many words: the
# length of a reader's paragraph, and within the reranker's input.
QUERY_WORDS = 60
# Queries kept per origin, drawn with the seed: Spurgeon's passages on the Psalms alone outnumber
# every other origin together, and a model taught mostly the Psalms learns less of the rest.
MAX_PER_ORIGIN = 4000
# Negatives are drawn from the vector ranking's first NEGATIVE_POOL chunks outside the verses.
NEGATIVE_POOL = 30
SCRIPTURE_GRANULARITIES = ("verse", "paragraph", "pericope")
SEED = 20261206
# Positives and negatives are the chunks of the translation a search prefers (search's
# DEFAULT_TRANSLATION): one text per verse set, where the others' would repeat it.
TRANSLATION = "WEB"


@dataclass(frozen=True)
class Pair:
    origin: str  # "commentary:<source id>" or "title:<source id>"
    query: str
    positive: str
    negatives: tuple[str, ...]
    refs: tuple[str, ...]  # the verses the query is about
    split: str  # "train" or "validation"

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class _Query:
    origin: str
    text: str
    refs: frozenset[str]
    titled: bool  # a pericope title: its own pericope holds it word for word, so it is no positive


def build_pairs(chunks: pd.DataFrame, vectors: dict[str, np.ndarray], embed: Callable[[list[str]], np.ndarray],
                guard: Guard, negatives: int = 4, seed: int = SEED, held_out: frozenset[str] = HELD_OUT) -> list[Pair]:
    """Pairs from an index version's chunks (`version_chunks`) and their vectors by chunk id;
    `embed` embeds the queries with the version's model."""
    scripture = _scripture(chunks, TRANSLATION, guard)
    queries = _queries(chunks, guard)
    if scripture.empty or not queries:
        return []
    matrix = np.stack([vectors[cid] for cid in scripture["chunk_id"]]).astype(np.float32)
    ranking = _rankings(embed([q.text for q in queries]), matrix)
    rng = random.Random(seed)
    passages = list(zip(scripture["text"], scripture["refs"].map(frozenset), scripture["granularity"]))
    chapters = [frozenset(_chapter(r) for r in refs) for _, refs, _ in passages]
    pairs = []
    for query, order in zip(queries, ranking):
        pair = _pair(query, order, passages, chapters, rng, negatives, held_out)
        if pair is not None:
            pairs.append(pair)
    return pairs


def _scripture(chunks: pd.DataFrame, translation: str, guard: Guard) -> pd.DataFrame:
    chosen = chunks[(chunks["kind"] == "scripture") & (chunks["translation"] == translation)
                    & chunks["granularity"].isin(SCRIPTURE_GRANULARITIES)]
    admitted = [guard.admits_source(sid, acl) for sid, acl in zip(chosen["source_id"], chosen["acl"])]
    return chosen[admitted].reset_index(drop=True)


def _queries(chunks: pd.DataFrame, guard: Guard) -> list[_Query]:
    found = []
    for row in chunks.itertuples(index=False):
        refs = frozenset(row.refs or ())
        if not refs or len(refs) > MAX_REFS or not guard.admits_source(row.source_id, row.acl):
            continue
        if row.kind == "commentary" and guard.admits_text(row.text):
            text = opening(row.text)
            if text:
                found.append(_Query(f"commentary:{row.source_id}", text, refs, False))
        elif row.kind == "scripture" and row.granularity == "pericope" and row.title and guard.admits_text(row.title):
            found.append(_Query(f"title:{row.source_id}", row.title, refs, True))
    return _per_origin(_distinct(found), MAX_PER_ORIGIN)


def _distinct(queries: list[_Query]) -> list[_Query]:
    """One query per text and verse set (each translation titles its pericopes alike)."""
    seen, kept = set(), []
    for query in queries:
        key = (query.text, query.refs)
        if key not in seen:
            seen.add(key)
            kept.append(query)
    return kept


def _per_origin(queries: list[_Query], limit: int, seed: int = SEED) -> list[_Query]:
    """At most `limit` queries of each origin, drawn with the seed, in their first order."""
    by_origin: dict[str, list[int]] = {}
    for i, query in enumerate(queries):
        by_origin.setdefault(query.origin, []).append(i)
    rng = random.Random(seed)
    kept = {i for found in by_origin.values() for i in (found if len(found) <= limit else rng.sample(found, limit))}
    return [query for i, query in enumerate(queries) if i in kept]


def opening(text: str, limit: int = QUERY_WORDS) -> str:
    """The entry's opening run of sentences within `limit` words, leaving out any sentence that
    holds a digit: a reference ("Verses 14-19", "ver. 18") turns a question into a look-up."""
    kept, count = [], 0
    for sentence in sentences(text):
        if any(ch.isdigit() for ch in sentence):
            continue
        n = len(sentence.split())
        if count + n > limit:
            break
        kept.append(sentence)
        count += n
    return " ".join(kept)


def _rankings(queries: np.ndarray, matrix: np.ndarray, depth: int = 1000, batch: int = 256) -> list[np.ndarray]:
    """Each query's `depth` most similar scripture rows, best first (exact: a matrix product)."""
    depth = min(depth, len(matrix))
    found = []
    for start in range(0, len(queries), batch):
        sims = queries[start:start + batch] @ matrix.T
        top = np.argpartition(-sims, depth - 1, axis=1)[:, :depth]
        for row, candidates in zip(sims, top):
            found.append(candidates[np.argsort(-row[candidates], kind="stable")])
    return found


def _pair(query: _Query, order: np.ndarray, passages: list, chapters: list, rng: random.Random, negatives: int,
          held_out: frozenset[str]) -> Pair | None:
    inside = [i for i in order if passages[i][1] <= query.refs
              and not (query.titled and passages[i][2] == "pericope")]
    near = {_chapter(r) for r in query.refs}
    pool = [i for i in order if chapters[i].isdisjoint(near)][:NEGATIVE_POOL]
    if not inside or len(pool) < negatives:
        return None
    positive = passages[inside[0]][0]
    chosen = rng.sample(pool, negatives)
    refs = tuple(sorted(query.refs))
    split = "validation" if _book(refs[0]) in held_out else "train"
    return Pair(query.origin, query.text, positive, tuple(passages[i][0] for i in chosen), refs, split)


def _chapter(ref: str) -> str:
    return ref.rsplit("_", 1)[0]


def _book(ref: str) -> str:
    return ref.rsplit("_", 2)[0]


def fingerprint(pairs: list[Pair]) -> str:
    digest = hashlib.sha256()
    for pair in pairs:
        digest.update(json.dumps(pair.to_json(), sort_keys=True).encode())
    return digest.hexdigest()[:16]


def summary(pairs: list[Pair], examples: int = 3) -> dict:
    """Counts by origin and split, and a few examples of each origin: what a reader checks first."""
    by_origin = Counter(p.origin for p in pairs)
    shown = {}
    for origin in sorted(by_origin):
        shown[origin] = [{"query": p.query, "positive": p.positive[:300], "negative": p.negatives[0][:300],
                          "refs": list(p.refs[:5])} for p in pairs if p.origin == origin][:examples]
    return {"pairs": len(pairs), "by_origin": dict(sorted(by_origin.items())),
            "by_split": dict(sorted(Counter(p.split for p in pairs).items())), "examples": shown}


def from_version(conn, version: str, embed: Callable[[list[str]], np.ndarray], guard: Guard, **options) -> list[Pair]:
    """The pairs of an index version: its chunks and their stored vectors, read as the owner (the
    guard admits public chunks alone)."""
    from pgvector.psycopg import register_vector
    from psycopg import sql

    from lectio.index import versions

    chunks = versions.version_chunks(conn, version)
    register_vector(conn)
    table = versions.get_version(conn, version).table_name
    rows = conn.execute(sql.SQL("SELECT chunk_id, embedding FROM {} WHERE kind = 'scripture'").format(
        sql.Identifier(table))).fetchall()
    vectors = {cid: np.asarray(vec.to_numpy() if hasattr(vec, "to_numpy") else vec, dtype=np.float32)
               for cid, vec in rows}
    return build_pairs(chunks, vectors, embed, guard, **options)


def write(pairs: list[Pair], path) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for pair in pairs:
            out.write(json.dumps(pair.to_json()) + "\n")


def read(path) -> list[Pair]:
    with open(path, encoding="utf-8") as lines:
        return [Pair(**{**record, "negatives": tuple(record["negatives"]), "refs": tuple(record["refs"])})
                for record in map(json.loads, lines)]
