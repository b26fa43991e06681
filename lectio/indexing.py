"""Building an index version from every source's chunks and deciding whether it goes live."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import psycopg

from lectio import store


@dataclass(frozen=True)
class IndexOutcome:
    version: str
    rows: int
    reused_existing: bool  # an identical version already existed: nothing was rebuilt
    live: bool
    reason: str  # why it is or is not live


def build_index(
    conn: psycopg.Connection,
    chunks: pd.DataFrame,
    model_id: str,
    failed_sources: list[str],
    switch_live: bool = True,
) -> IndexOutcome:
    """Build (or find) the version holding exactly these chunks, and switch it in when safe.

    A version is switched in only when every source was indexed, or when nothing is live yet:
    a run in which some source failed never replaces what users are searching.
    """
    if chunks.empty:
        raise ValueError("no chunks to index: every source failed or none is configured")
    fp = store.fingerprint(chunks, model_id)
    existing = store.find_ready_version(conn, fp)
    version = existing or store.build_version(conn, chunks, model_id, fp).version
    current = store.live_version(conn)
    if not switch_live:
        live, reason = current == version, f"built as a candidate; {current or 'nothing'} stays live"
    elif failed_sources and current is not None:
        live, reason = False, f"kept {current} live because these sources failed: {', '.join(failed_sources)}"
    elif current == version:
        live, reason = True, "unchanged: this version was already live"
    else:
        store.switch_live(conn, version)
        live, reason = True, f"switched live (previous: {current or 'none'})"
    rows = store.get_version(conn, version).rows
    return IndexOutcome(version, rows, existing is not None, live, reason)
