"""Building an index version from every source's chunks and deciding whether it goes live."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import pandas as pd
import psycopg

from lectio.quality import admission
from lectio.index import loader, mirror, revocation, versions
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
    # Each failed source (with carry_failed) and what became of it: its last good chunks carried
    # over from the live version, or why it is not in this version.
    carried: dict[str, str] = field(default_factory=dict)
    chunks: int = 0  # the chunks this version was built from, carried ones included
    # Sources the live version holds whose chunks this version cuts by other rules ("old -> new"):
    # such a version is never switched in by the build, only by the migration gate.
    rule_changes: dict[str, str] = field(default_factory=dict)
    # "old -> new" where this version's vectors are another model's than the live version's (see
    # model_change): held back for the gate as a rule change is.
    model_change: str = ""

    @property
    def awaits_gate(self) -> bool:
        """Built to go live, held back for the gate by a rule or model change."""
        return bool(self.rule_changes or self.model_change) and not self.live


@dataclass(frozen=True)
class BuildChecks:
    """What a build checks the chunks it is handed against, and what it does for a failed source.

    `sources`: each source as the sources file has it now (each chunk's ACL is checked against its
    source's). `expected`: the chunks' fingerprint each source's ingest made in this run (see
    _replaced_sources); a build handed none trusts what it is given. `carry_failed`: a failed
    source's last good chunks are carried over from the live version (see build_index)."""

    sources: Mapping[str, Source | SourceError] | None = None
    expected: Mapping[str, str] = field(default_factory=dict)
    carry_failed: bool = False


def build_index(
    conn: psycopg.Connection,
    chunks: pd.DataFrame,
    model_id: str,
    failed_sources: list[str],
    switch_live: bool = True,
    checks: BuildChecks = BuildChecks(),
) -> IndexOutcome:
    """Build (or find) the version holding exactly these chunks, and switch it in when safe.

    A version is switched in only when every source was indexed, or when nothing is live yet:
    a run in which some source failed never replaces what users are searching. Nor does one
    that cuts a source by other rules than the live version (rule_changes), or embeds with another
    model (model_change): it is built as a candidate, and only the migration gate switches it in
    (IndexOutcome.awaits_gate).

    With `checks.carry_failed`, a source in `failed_sources` (its ingest failed) no longer holds the
    rest back: the version carries its last good chunks from the live version instead of any it
    is handed (see _last_good_chunks), and switches in. One that has nothing to carry (never
    indexed, or the sources file no longer allows what the live version shows of it) is simply
    not in the version. Only a live version built with another model, whose chunks cannot be
    carried, still holds it back.

    The blocking quality checks run here, before anything is loaded (with `checks.sources`, each
    chunk's ACL is checked against its source's). A source that fails one is treated as a
    failed source rather than failing the whole build: its chunks stay out of the version, and
    the rule above keeps the live index as it is, so one bad source neither stops the others
    from being indexed as a candidate nor reaches users. So does a source that makes a chunk id
    a source listed before it makes (see _colliding_sources).
    """
    sources = checks.sources
    chosen = _chunks_to_index(conn, chunks, failed_sources, sources, checks.expected, checks.carry_failed, model_id)
    chunks, failed_sources, kept_out, rejected, carried = chosen
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
    # Only a build asked to switch needs them: a candidate goes to the gate anyway.
    changed, model = (rule_changes(conn, chunks), model_change(conn, model_id)) if switch_live else ({}, "")
    live, reason = _go_live(conn, version, failed_sources, switch_live, _held_for_gate(changed, model))
    if rejected:
        reason += f"; failed quality checks: {admission.describe(rejected)}"
    # Judged before `version` was found or built, so it is never among the revoked.
    if judgement and (judgement.revoked or judgement.reinstated):
        reason += "; " + judgement.describe()
    rows = versions.get_version(conn, version).rows
    if kept_out:
        reason += "; " + "; ".join(f"{sid}: {why}" for sid, why in sorted(kept_out.items()))
    if carried:
        reason += "; failed sources: " + "; ".join(f"{sid}: {what}" for sid, what in sorted(carried.items()))
    details = {sid: ", ".join(f"{r.name}: {r.description}" for r in results) for sid, results in rejected.items()}
    return IndexOutcome(version, rows, existing is not None, live, reason, {**details, **kept_out}, carried,
                        len(chunks), changed, model)


def rule_changes(conn: psycopg.Connection, chunks: pd.DataFrame) -> dict[str, str]:
    """Per source the ready live version holds, "old -> new" where `chunks` cut it by other rules
    (a rule override, `chunking:`, a new version of its ruleset): re-chunking is a migration, gated
    on the labelled queries (lectio.evaluation.migration_gate), never a plain switch."""
    live = versions.get_version(conn)
    if live is None or live.status != "ready":
        return {}
    before = versions.source_rulesets(conn, live.version)
    now = chunks.groupby("source_id")["ruleset"].agg(set).to_dict()
    return {sid: f"{', '.join(sorted(before[sid]))} -> {', '.join(sorted(rules))}"
            for sid, rules in sorted(now.items()) if sid in before and before[sid] != rules}


def model_change(conn: psycopg.Connection, model_id: str) -> str:
    """"old -> new" where `model_id` makes other vectors than the ready live version's model, else
    "". The home's files choose the model a plain build embeds with (the adapted embedder its
    ACTIVE.json names, the numerics its runtime record chose): a version of another model is a
    migration, gated on the labelled queries under the model tolerances, never a plain switch."""
    live = versions.get_version(conn)
    if live is None or live.status != "ready" or versions.same_vectors(live.model_id, model_id):
        return ""
    return f"{live.model_id} -> {model_id}"


def _held_for_gate(changed_rules: Mapping[str, str], model: str) -> str:
    """Why a build asked to switch is left to the migration gate, in words, or "" where it is not."""
    changes = []
    if changed_rules:
        rules = "; ".join(f"{sid}: {change}" for sid, change in changed_rules.items())
        changes.append(("rule", f"the chunking rules changed ({rules})"))
    if model:
        changes.append(("model", f"the embedding model changed ({model})"))
    if not changes:
        return ""
    what = " and ".join(what for _, what in changes)
    return f"{what}, and a {' and '.join(kind for kind, _ in changes)} change goes live only through the migration gate"


def _chunks_to_index(conn: psycopg.Connection, chunks: pd.DataFrame, failed_sources: list[str],
                     sources: Mapping[str, Source | SourceError] | None, expected: Mapping[str, str],
                     carry_failed: bool, model_id: str):
    """The chunks a version is built from, the sources that count as failed, those kept out
    (with why), those rejected by the quality checks and what became of each carried source."""
    ingest_failed = list(failed_sources)
    # Sources kept out of the version for a reason other than a quality check, with why.
    kept_out = _replaced_sources(chunks, expected)
    if kept_out:
        chunks = chunks[~chunks["source_id"].isin(kept_out)]
        failed_sources = sorted(set(failed_sources) | set(kept_out))
    rejected = admission.admit(chunks, sources) if not chunks.empty else {}
    if rejected:
        chunks = chunks[~chunks["source_id"].isin(rejected)]
        failed_sources = sorted(set(failed_sources) | set(rejected))
    carried: dict[str, str] = {}
    if carry_failed and sources is not None and ingest_failed:
        # After admission: the carried chunks passed it when the live version was built, and the
        # sources file's ACLs are applied to them in _last_good_chunks.
        last_good, carried, holding = _last_good_chunks(conn, ingest_failed, sources, model_id)
        # Whatever the failed sources' partitions still hold is older than their failure and not
        # what users were shown; the live version's chunks are.
        chunks = chunks[~chunks["source_id"].isin(ingest_failed)]
        if not last_good.empty:
            chunks = pd.concat([chunks, last_good], ignore_index=True) if not chunks.empty else last_good
        failed_sources = sorted((set(failed_sources) - set(ingest_failed)) | set(holding))
    # After admission: a source kept out by its checks claims no id from a later one.
    colliding = _colliding_sources(chunks, sources)
    if colliding:
        chunks = chunks[~chunks["source_id"].isin(colliding)]
        failed_sources = sorted(set(failed_sources) | set(colliding))
        kept_out.update(colliding)
    return chunks, failed_sources, kept_out, rejected, carried


def _last_good_chunks(conn: psycopg.Connection, failed: list[str], sources: Mapping[str, Source | SourceError],
                      model_id: str) -> tuple[pd.DataFrame, dict[str, str], list[str]]:
    """The live version's chunks of the failed sources that the sources file still allows as
    they are shown there, what became of each failed source, and those that must still hold the
    live version (their chunks cannot be carried into a version of another model).

    A source the file no longer lists, or whose ACL narrowed since (revocation), is not carried:
    its chunks would be shown wider than the file allows. Its entry need not be valid otherwise:
    a typo in its format keeps the ACL it states, as revocation.allowed_acls reads it."""
    live = versions.get_version(conn)
    if live is None or live.status != "ready":
        # What became of it, not why it failed: the reader puts that first (assets.index).
        why = "not indexed: " + ("no version is live" if live is None else f"the live version {live.version} is revoked")
        return pd.DataFrame(), dict.fromkeys(failed, why), []
    if live.model_id != model_id:
        why = f"not indexed: the live version {live.version} was embedded by another model"
        held = [sid for sid in failed if sid in live.sources]
        return pd.DataFrame(), {sid: why + (f"; {live.version} stays live" if sid in held else "") for sid in failed}, held
    allowed = revocation.allowed_acls(sources)
    exposed = revocation.exposures(conn, live.version, allowed)
    notes, keep = {}, []
    for sid in failed:
        if sid not in live.sources:
            notes[sid] = f"not indexed: the live version {live.version} does not hold it"
        elif sid in exposed:
            notes[sid] = (f"not carried from {live.version}: " + revocation.describe_exposure({sid: exposed[sid]}, allowed))
        else:
            keep.append(sid)
    if not keep:
        return pd.DataFrame(), notes, []
    frame = versions.version_chunks(conn, live.version)
    frame = frame[frame["source_id"].isin(keep)]
    counts = frame.groupby("source_id").size().to_dict()
    for sid in keep:
        notes[sid] = f"kept its last good chunks ({counts.get(sid, 0)}) from {live.version}"
    return frame, notes, []


def _go_live(conn: psycopg.Connection, version: str, failed_sources: list[str], switch_live: bool,
             held: str) -> tuple[bool, str]:
    """Whether `version` is live now (switched to when the rule of build_index allows), and why;
    `held`: why only the migration gate may switch it in ("" where a build may)."""
    current = versions.get_version(conn)
    # A revoked live version serves nobody: any version built from the file beats it, even one
    # that lacks a failed source.
    live_revoked = current is not None and current.status == "revoked"
    current = current.version if current else None
    if not switch_live:
        return current == version, f"built as a candidate; {current or 'nothing'} stays live"
    if failed_sources and current is not None and not live_revoked:
        return False, f"kept {current} live because these sources failed: {', '.join(failed_sources)}"
    if held:  # never found against a revoked live version (rule_changes, model_change)
        return False, f"built as a candidate, {current} stays live: {held}"
    # Its lexical mirror before it serves: until one is built, a search scores BM25 in SQL, whose
    # time grows with private postings it reads and then drops (a few seconds of the full corpus).
    mirror.ensure(conn, versions.get_version(conn, version))
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
