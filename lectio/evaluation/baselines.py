"""Plain designs scored beside lectio on the same index version, in the same run, so a result
always comes with what a 50-line system gets on the same queries.

All read the WEB verse rows of the version (the translation the default search prefers), as the
query's principals under row-level security:

- `verse-vector`: the query's vector against every verse's, exact (no HNSW), cosine;
- `verse-bm25`: standard BM25 (k1 1.2, b 0.75) over the verses alone, with document
  frequencies and lengths counted over those verses; no expansion, no prior, no titles;
- `verse-hybrid`: the two fused by reciprocal rank fusion (k 60) over their first 100 each;
- `chapter-vector`: a chapter's vector is the normalised mean of its verses' vectors (no model
  truncation at play); a hit covers every verse of its chapter, and its text is the chapter's.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg import sql

from lectio.embedding.model import Embedder
from lectio.index import bm25, security, versions

BASELINES = ("verse-vector", "verse-bm25", "verse-hybrid", "chapter-vector")
TRANSLATION = "WEB"
RRF_K, FUSION_DEPTH = 60, 100


@dataclass(frozen=True)
class Hit:
    refs: tuple[str, ...]
    text: str


class Baselines:
    """The verse rows of one version, read once; each baseline then answers from memory."""

    def __init__(self, conn: psycopg.Connection, version: str, embedder: Embedder, principals=("public",)):
        info = versions.get_version(conn, version)
        if info is None:
            raise ValueError(f"no index version {version!r}")
        self.embedder = embedder.for_model(info.model_id)  # queries embedded as the version's verses were
        with conn.transaction():
            security.act_as_reader(conn, principals)
            rows = conn.execute(
                sql.SQL("SELECT refs[1], text, embedding, book, chapter, "
                        "array(SELECT lexeme || ':' || coalesce(array_length(positions, 1), 1) FROM unnest(tsv)) "
                        "FROM {} WHERE granularity = 'verse' AND translation = %s ORDER BY ordinal").format(
                    sql.Identifier(info.table_name)),
                (TRANSLATION,),
            ).fetchall()
        if not rows:
            raise ValueError(f"index version {version} holds no {TRANSLATION} verses to compare with")
        self.refs = [r[0] for r in rows]
        self.texts = [r[1] for r in rows]
        self.vectors = np.stack([np.asarray(r[2].to_numpy() if hasattr(r[2], "to_numpy") else r[2], dtype=np.float32)
                                 for r in rows])
        self._bm25_index([r[5] for r in rows])
        self._chapters([(r[3], r[4]) for r in rows])

    def _bm25_index(self, lexemes: list[list[str]]) -> None:
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lengths = []
        for doc, entries in enumerate(lexemes):
            length = 0
            for entry in entries:
                word, _, tf = entry.rpartition(":")
                self.postings[word].append((doc, int(tf)))
                length += int(tf)
            lengths.append(length)
        self.lengths = np.asarray(lengths, dtype=np.float32)
        self.avgdl = float(self.lengths.mean()) or 1.0

    def _chapters(self, keys: list[tuple[str, int]]) -> None:
        members: dict[tuple[str, int], list[int]] = defaultdict(list)
        for i, key in enumerate(keys):
            members[key].append(i)
        self.chapter_members = list(members.values())
        means = np.stack([self.vectors[m].mean(axis=0) for m in self.chapter_members])
        self.chapter_vectors = means / np.linalg.norm(means, axis=1, keepdims=True)

    # ---------------------------------------------------------------- the baselines

    def retrieve(self, name: str, query: str, terms: list[str], k: int) -> list[Hit]:
        if name == "chapter-vector":
            scores = self.chapter_vectors @ self._vector(query)
            return [Hit(tuple(self.refs[i] for i in self.chapter_members[c]),
                        " ".join(self.texts[i] for i in self.chapter_members[c])) for c in _top(scores, k)]
        if name == "verse-vector":
            ranked = _top(self.vectors @ self._vector(query), k)
        elif name == "verse-bm25":
            ranked = self._bm25(terms, k)
        elif name == "verse-hybrid":
            fused: Counter = Counter()
            for ranking in (_top(self.vectors @ self._vector(query), FUSION_DEPTH), self._bm25(terms, FUSION_DEPTH)):
                for rank, doc in enumerate(ranking, start=1):
                    fused[doc] += 1 / (RRF_K + rank)
            ranked = [doc for doc, _ in sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]]
        else:
            raise ValueError(f"no baseline {name!r}; there are {', '.join(BASELINES)}")
        return [Hit((self.refs[i],), self.texts[i]) for i in ranked]

    def _vector(self, query: str) -> np.ndarray:
        return self.embedder.encode([query])[0]

    def _bm25(self, terms: list[str], k: int) -> list[int]:
        n = len(self.refs)
        scores: dict[int, float] = defaultdict(float)
        for term in dict.fromkeys(terms):
            postings = self.postings.get(term, [])
            if not postings:
                continue
            idf = bm25.idf(n, len(postings))
            for doc, tf in postings:
                norm = bm25.length_norm(self.lengths[doc], self.avgdl, bm25.K1, bm25.B)
                scores[doc] += bm25.saturation(tf, norm, bm25.K1, idf)
        return [doc for doc, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]]


def query_terms(conn: psycopg.Connection, query: str) -> list[str]:
    """The query's words as PostgreSQL's English configuration stems them (as the verses' were)."""
    return [row[0] for row in conn.execute("SELECT lexeme FROM unnest(to_tsvector('english', %s))", (query,))]


def _top(scores: np.ndarray, k: int) -> list[int]:
    k = min(k, len(scores))
    top = np.argpartition(-scores, k - 1)[:k]
    return sorted(top.tolist(), key=lambda i: (-scores[i], i))
