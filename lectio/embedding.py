"""Embedding chunks through the cache: a text already embedded by this model is never re-embedded."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import pandas as pd
import psycopg

from lectio import store
from lectio.model import Embedder

# Texts embedded per round trip: large enough to keep the model busy, small enough that an
# interrupted run keeps most of what it did.
WRITE_BATCH = 2048

log = logging.getLogger(__name__)


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
    have = store.cached_hashes(conn, texts, embedder.model_id)
    missing = [h for h in texts if h not in have]
    # Similar lengths in one batch waste less padding.
    missing.sort(key=lambda h: len(texts[h]))
    started = time.monotonic()
    for start in range(0, len(missing), WRITE_BATCH):
        batch = missing[start : start + WRITE_BATCH]
        vectors = embedder.encode([texts[h] for h in batch])
        store.store_embeddings(conn, batch, vectors, embedder.model_id)
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
