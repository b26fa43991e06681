"""Embedding chunks through the cache: a text already embedded by this model is never re-embedded."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd
import psycopg

from lectio.embedding.model import DIMENSIONS, Embedder

# Texts embedded per round trip: large enough to keep the model busy, small enough that an
# interrupted run keeps most of what it did.
WRITE_BATCH = 2048

log = logging.getLogger(__name__)

# One vector per (text, model): the same text in any source, run or version is embedded once.
CACHE_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS embedding_cache (
    content_hash text NOT NULL,
    model_id text NOT NULL,
    embedding vector({DIMENSIONS}) NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (content_hash, model_id)
);
"""


def cached_hashes(conn: psycopg.Connection, hashes: Iterable[str], model_id: str) -> set[str]:
    rows = conn.execute(
        "SELECT content_hash FROM embedding_cache WHERE model_id = %s AND content_hash = ANY(%s)",
        (model_id, list(set(hashes))),
    ).fetchall()
    return {r[0] for r in rows}


def store_embeddings(conn: psycopg.Connection, hashes: list[str], vectors: np.ndarray, model_id: str) -> None:
    with conn.transaction():
        conn.execute(
            "CREATE TEMP TABLE incoming (content_hash text, embedding vector) ON COMMIT DROP"
        )
        with conn.cursor().copy("COPY incoming FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["text", "vector"])
            for h, v in zip(hashes, vectors):
                copy.write_row((h, v))
        # Another process may have embedded the same text meanwhile; either copy is fine.
        conn.execute(
            "INSERT INTO embedding_cache (content_hash, model_id, embedding) "
            "SELECT content_hash, %s, embedding FROM incoming ON CONFLICT DO NOTHING",
            (model_id,),
        )


@dataclass(frozen=True)
class EmbeddingStats:
    chunks: int
    unique_texts: int
    reused: int
    embedded: int
    seconds: float = 0.0

    @property
    def texts_per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds else 0.0


def embed_chunks(conn: psycopg.Connection, chunks: pd.DataFrame, embedder: Embedder) -> EmbeddingStats:
    texts = dict(zip(chunks["content_hash"], chunks["text"]))
    have = cached_hashes(conn, texts, embedder.model_id)
    missing = [h for h in texts if h not in have]
    # Similar lengths in one batch waste less padding.
    missing.sort(key=lambda h: len(texts[h]))
    started = time.monotonic()
    for start in range(0, len(missing), WRITE_BATCH):
        batch = missing[start : start + WRITE_BATCH]
        vectors = embedder.encode([texts[h] for h in batch])
        store_embeddings(conn, batch, vectors, embedder.model_id)
        done = start + len(batch)
        rate = done / (time.monotonic() - started)
        log.info("embedded %s/%s texts (%.0f/s)", f"{done:,}", f"{len(missing):,}", rate)
    return EmbeddingStats(
        chunks=len(chunks),
        unique_texts=len(texts),
        reused=len(have),
        embedded=len(missing),
        seconds=time.monotonic() - started,
    )
