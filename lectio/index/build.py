"""Building an index version from every source's chunks and deciding whether it goes live."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import pandas as pd
import psycopg

from lectio.quality import admission
from lectio.index import loader, revocation, versions
from lectio.sources import Source, SourceError


@dataclass(frozen=True)
class IndexOutcome:
    version: str
    rows: int
    reused_existing: bool  # an identical version already existed: nothing was rebuilt
    live: bool
    reason: str  # why it is or is not live
    # Sources kept out because their chunks failed a blocking quality check: what failed, how.
    rejected: dict[str, str] = field(default_factory=dict)


def build_index(
    conn: psycopg.Connection,
    chunks: pd.DataFrame,
    model_id: str,
    failed_sources: list[str],
    switch_live: bool = True,
    sources: Mapping[str, Source | SourceError] | None = None,
    expected: Mapping[str, str] | None = None,
) -> IndexOutcome:
    """Build (or find) the version holding exactly these chunks, and switch it in when safe.

    A version is switched in only when every source was indexed, or when nothing is live yet:
    a run in which some source failed never replaces what users are searching.

    The blocking quality checks run here, before anything is loaded (with `sources`, each
    chunk's ACL is checked against its source's). A source that fails one is treated as a
    failed source rather than failing the whole build: its chunks stay out of the version, and
    the rule above keeps the live index as it is, so one bad source neither stops the others
    from being indexed as a candidate nor reaches users. So does a source that makes a chunk id
    a source listed before it makes (see _colliding_sources).
    """
    # Sources kept out of the version for a reason other than a quality check, with why.
    kept_out = _replaced_sources(chunks, expected or {})
    if kept_out:
        chunks = chunks[~chunks["source_id"].isin(kept_out)]
        failed_sources = sorted(set(failed_sources) | set(kept_out))
    rejected = admission.admit(chunks, sources) if not chunks.empty else {}
    if rejected:
        chunks = chunks[~chunks["source_id"].isin(rejected)]
        failed_sources = sorted(set(failed_sources) | set(rejected))
    # After admission: a source kept out by its checks claims no id from a later one.
    colliding = _colliding_sources(chunks, sources)
    if colliding:
        chunks = chunks[~chunks["source_id"].isin(colliding)]
        failed_sources = sorted(set(failed_sources) | set(colliding))
        kept_out.update(colliding)
    if chunks.empty:
        blocked = f"; blocked by quality checks: {admission.describe(rejected)}" if rejected else ""
        blocked += "".join(f"; {sid}: {why}" for sid, why in sorted(kept_out.items()))
        raise ValueError(f"no chunks to index: every source failed or none is configured{blocked}")
    # Judged before anything is reused or switched: a version that shows a chunk more widely
    # than the sources file now allows (an ACL fixed or a source removed since it was built) is
    # never served again, whatever points at it.
    judgement = revocation.judge(conn, revocation.allowed_acls(sources)) if sources is not None else None
    fp = versions.fingerprint(chunks, model_id)
    existing = versions.find_ready_version(conn, fp)
    version = existing or loader.build_version(conn, chunks, model_id, fp).version
    live, reason = _go_live(conn, version, failed_sources, switch_live)
    if rejected:
        reason += f"; failed quality checks: {admission.describe(rejected)}"
    # Judged before `version` was found or built, so it is never among the revoked.
    if judgement and (judgement.revoked or judgement.reinstated):
        reason += "; " + judgement.describe()
    rows = versions.get_version(conn, version).rows
    if kept_out:
        reason += "; " + "; ".join(f"{sid}: {why}" for sid, why in sorted(kept_out.items()))
    details = {sid: ", ".join(f"{r.name}: {r.description}" for r in results) for sid, results in rejected.items()}
    return IndexOutcome(version, rows, existing is not None, live, reason, {**details, **kept_out})


def _go_live(conn: psycopg.Connection, version: str, failed_sources: list[str], switch_live: bool) -> tuple[bool, str]:
    """Whether `version` is live now (switched to when the rule of build_index allows), and why."""
    current = versions.get_version(conn)
    # A revoked live version serves nobody: any version built from the file beats it, even one
    # that lacks a failed source.
    live_revoked = current is not None and current.status == "revoked"
    current = current.version if current else None
    if not switch_live:
        return current == version, f"built as a candidate; {current or 'nothing'} stays live"
    if failed_sources and current is not None and not live_revoked:
        return False, f"kept {current} live because these sources failed: {', '.join(failed_sources)}"
    if current == version:
        return True, "unchanged: this version was already live"
    versions.switch_live(conn, version)
    return True, f"switched live (previous: {current or 'none'})"


def _colliding_sources(chunks: pd.DataFrame, sources: Mapping[str, Source | SourceError] | None) -> dict[str, str]:
    """Sources that make a chunk id an earlier source already makes, with why. Ids are unique
    within a source (lectio.rulesets.registry) and most start with their source's id, but two
    scripture sources with one translation code, or two lexicons of one dictionary, make the same
    ids; the later in the sources file (in id order without `sources`) fails alone, where the
    version table's key would otherwise fail every build."""
    order = {sid: position for position, sid in enumerate(sources or {})}
    owner: dict[str, str] = {}  # chunk id → the source whose chunk it is
    colliding = {}
    ids_by_source = chunks.groupby("source_id", sort=False)["chunk_id"]
    for sid in sorted(ids_by_source.groups, key=lambda s: (order.get(s, len(order)), s)):
        ids = ids_by_source.get_group(sid).tolist()
        taken = next((i for i in ids if i in owner), None)
        if taken is None:
            owner.update(dict.fromkeys(ids, sid))
        else:
            colliding[sid] = (f"chunk id {taken!r} is also made by source {owner[taken]!r}, listed before it: "
                              "two sources cannot index the same chunks (a scripture source needs a translation "
                              "code of its own)")
    return colliding


def _replaced_sources(chunks: pd.DataFrame, expected: Mapping[str, str]) -> dict[str, str]:
    """Sources whose chunks are not those their ingest made in this run (another run stored its
    own over them meanwhile, or they are gone), with why. Only sources in `expected` are checked:
    a build handed no expectations (the UI, a test) trusts what it is given."""
    found = versions.source_fingerprints(chunks)
    counts = chunks.groupby("source_id").size().to_dict()
    replaced = {}
    for sid, fp in expected.items():
        if sid not in found:
            replaced[sid] = "its chunks from this run are no longer stored"
        elif found[sid] != fp:
            replaced[sid] = (f"the stored chunks ({counts.get(sid, 0)}) are not those this run made; "
                             "another run replaced them, so this source is not indexed from them")
    return replaced
