"""Data-quality checks over a source's chunks and their vectors.

Each check returns a `CheckResult` (lectio.quality.results). Dagster shows them as asset checks
(assets/checks.py); lectio.quality.admission runs the blocking ones again when an index is built,
so no path into the index skips them.

Size and window-embedded chunks: the model reads MAX_TEXT_TOKENS word pieces; a longer text is
embedded as the token-weighted mean of its windows (lectio.embedding.model.Embedder.encode). Every chunker
keeps its chunks under the limit, except the granularities its ruleset declares long by design
(Ruleset.window_embedded: scripture's pericopes, chapters and fixed windows, where a pericope is a
passage and its verses are the precise hits). Those are allowed past the limit and counted in the
check's metadata, so a growing tail stays visible; anything else past the limit fails.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from lectio.embedding.model import DIMENSIONS
from lectio.quality.expectations import expect, failing_ids, summaries
from lectio.quality.results import CheckResult, result_of
from lectio.rulesets.base import Ruleset
from lectio.rulesets.chunk import GRANULARITIES
from lectio.sources import KINDS, Source

MAX_COUNT_DROP = 0.20  # a source losing more than this share of its chunks since its last run
UNIT_NORM_TOLERANCE = 1e-3  # float32 vectors normalised by the model sit well within this
PATRISTIC_TAGS = ("scripture_refs", "topics", "disputes_positions")


def _length(values: pd.Series) -> pd.Series:
    return values.map(lambda v: len(v) if isinstance(v, (list, tuple, np.ndarray, str)) else 0)


# ---------------------------------------------------------------- permission tags


def permission_tags(chunks: pd.DataFrame, source: Source | None) -> CheckResult:
    """Every chunk carries a non-empty ACL equal to its source's: none is more visible (a
    principal the source does not name) or differently visible than the source it came from."""
    import great_expectations as gx

    frame = chunks[["chunk_id", "acl"]].assign(acl_size=_length(chunks["acl"]))
    outcomes = expect(frame, [gx.expectations.ExpectColumnValuesToBeBetween(column="acl_size", min_value=1)])
    missing = failing_ids(outcomes, "expect_column_values_to_be_between")
    failing = {"chunks without an ACL": missing}
    if source is not None:
        allowed, skip = set(source.acl), set(missing)
        acls = {cid: set(acl) for cid, acl in zip(frame["chunk_id"], frame["acl"]) if cid not in skip}
        failing["chunks more visible than their source"] = [c for c, acl in acls.items() if acl - allowed]
        failing["chunks with an ACL other than their source's"] = [c for c, acl in acls.items() if acl != allowed]
    ok = f"all {len(frame)} chunks carry the source's ACL" + (f" {sorted(source.acl)}" if source else "")
    return result_of("permission_tags", True, failing, ok, expectations=summaries(outcomes))


# ---------------------------------------------------------------- header presence


def header_presence(chunks: pd.DataFrame, structure: Any = None) -> CheckResult:
    """The context each kind of chunk needs to be read alone: a table's header row on every chunk
    holding its rows (against the parsed document), a commentary chunk's context header (see
    `_context_headers`), a document chunk's breadcrumb (also its first line), a patristic
    chunk's tags."""
    import great_expectations as gx

    frame = chunks.assign(header_size=_length(_context_headers(chunks)), breadcrumb_size=_length(chunks["breadcrumb"]))
    commentary = frame[frame["kind"] == "commentary"]
    document = frame[frame["kind"] == "document"]
    outcomes = expect(commentary[["chunk_id", "header_size"]],
                      [gx.expectations.ExpectColumnValuesToBeBetween(column="header_size", min_value=1)])
    outcomes += expect(document[["chunk_id", "breadcrumb_size"]],
                       [gx.expectations.ExpectColumnValuesToBeBetween(column="breadcrumb_size", min_value=1)])
    has_crumb = document[document["breadcrumb_size"] > 0]
    crumb_not_first = [c for c, t, b in zip(has_crumb["chunk_id"], has_crumb["text"], has_crumb["breadcrumb"])
                       if t.split("\n", 1)[0] != b]
    patristic = frame[frame["kind"] == "patristic"]
    untagged = [c for c, m in zip(patristic["chunk_id"], patristic["metadata"])
                if not all(isinstance((m or {}).get(tag), list) for tag in PATRISTIC_TAGS)]
    tables, headless = _table_headers(frame, structure)
    failing = {
        "table chunks without their header row": headless,
        "commentary chunks without a context header": failing_ids(outcomes, "expect_column_values_to_be_between", "header_size"),
        "document chunks without a breadcrumb": failing_ids(outcomes, "expect_column_values_to_be_between", "breadcrumb_size"),
        "document chunks not opening with their breadcrumb": crumb_not_first,
        "patristic chunks without their tags": untagged,
    }
    ok = f"all {len(frame)} chunks carry their context ({tables} holding table rows)"
    return result_of("header_presence", True, failing, ok, expectations=summaries(outcomes),
                   details={"table_chunks": tables})


def _context_headers(chunks: pd.DataFrame) -> pd.Series:
    """Each chunk's context header: the `header` field where the chunker sets one (a verse's
    reference), else a commentary chunk's first text line, `[Commentary on <passage> | …]`,
    which the commentary chunker embeds with the body; "" where there is neither."""

    def context(text, header, metadata) -> str:
        if isinstance(header, str) and header.strip():
            return header
        first = text.split("\n", 1)[0]
        passage = (metadata or {}).get("passage") or ""
        return first if first.startswith(f"[Commentary on {passage}") and first.endswith("]") else ""

    return pd.Series([context(t, h, m) for t, h, m in zip(chunks["text"], chunks["header"], chunks["metadata"])],
                     index=chunks.index, dtype=object)


def _table_headers(frame: pd.DataFrame, structure: Any) -> tuple[int, list[str]]:
    """(chunks holding table rows, those of them missing the header row of a table they hold).

    The chunk alone cannot tell a header row from a data row, so the tables come from the parsed
    document the chunks were cut from; a chunk holds a table when one of the table's rows is a
    line of its text, and must then hold the header row as a line too. Without the document (at
    index time) the header rows the chunker recorded are checked instead."""
    from lectio.readers.document_model import Document, Table
    from lectio.rulesets.documents import row_text  # the one rendering of a table row

    if not isinstance(structure, Document):
        return _recorded_table_headers(frame)
    tables = [
        (section.path, row_text(block.header), {row_text(row) for row in block.rows} - {row_text(block.header)})
        for section in structure.sections
        for unit in section.units
        for block in (unit.block, *unit.exceptions)
        if isinstance(block, Table) and block.header and block.rows
    ]
    holding, headless = 0, []
    for chunk_id, text, metadata in zip(frame["chunk_id"], frame["text"], frame["metadata"]):
        path = tuple((metadata or {}).get("section_path") or ())
        lines = {line.strip() for line in text.split("\n")}
        held = [header for tpath, header, rows in tables if tpath[: len(path)] == path and lines & rows]
        if held:
            holding += 1
            if any(header not in lines for header in held):
                headless.append(chunk_id)
    return holding, headless


def _recorded_table_headers(frame: pd.DataFrame) -> tuple[int, list[str]]:
    """Without the parsed document: the chunks whose metadata records the header row of a table
    they were cut from, and those of them whose text no longer holds that row as a line."""
    holding, headless = 0, []
    for chunk_id, text, metadata in zip(frame["chunk_id"], frame["text"], frame["metadata"]):
        header = (metadata or {}).get("table_header") if isinstance(metadata, dict) else None
        if header:
            holding += 1
            if header not in {line.strip() for line in text.split("\n")}:
                headless.append(chunk_id)
    return holding, headless


# ---------------------------------------------------------------- size and count


def chunk_sizes(chunks: pd.DataFrame, rules: Ruleset) -> CheckResult:
    """No chunk past its ruleset's cap, the model's input limit, except the granularities the
    ruleset embeds by windows (Ruleset.window_embedded), which are counted instead."""
    import great_expectations as gx

    windowed = chunks["granularity"].isin(rules.window_embedded)
    bounded = chunks.loc[~windowed, ["chunk_id", "tokens"]]
    outcomes = expect(bounded, [gx.expectations.ExpectColumnValuesToBeBetween(column="tokens", max_value=rules.max_tokens)])
    long = chunks[windowed & (chunks["tokens"] > rules.max_tokens)]
    counts_by = long.groupby("granularity").size().to_dict()
    result = result_of(
        "chunk_sizes", False,
        {f"chunks over the model's {rules.max_tokens} word pieces": failing_ids(outcomes, "expect_column_values_to_be_between")},
        f"every chunk embedded whole fits the model's {rules.max_tokens} word pieces",
        expectations=summaries(outcomes),
        details={"max_tokens": int(chunks["tokens"].max()) if len(chunks) else 0,
                 "window_embedded_granularities": ", ".join(sorted(rules.window_embedded)) or "none"},
    )
    counts = {**result.counts, **{f"window_embedded_{g}": int(n) for g, n in counts_by.items()}}
    return replace(result, counts=counts)


def chunk_count(current: int, previous: int | None, same_rules: bool = True, max_drop: float = MAX_COUNT_DROP) -> CheckResult:
    """The chunk count against the source's previous run: a drop past `max_drop` fails with WARN
    severity (an alert, not a stop: a source may shrink on purpose). A change of chunking rules
    changes counts by design, so it is not compared then."""
    if previous is None:
        return CheckResult("chunk_count", True, False, f"{current} chunks; no previous run to compare", {"chunks": current})
    counts = {"chunks": current, "previous_chunks": previous}
    if not same_rules:
        return CheckResult("chunk_count", True, False,
                           f"{current} chunks (previously {previous}); the chunking rules changed, not compared", counts)
    drop = (previous - current) / previous if previous else 0.0
    details = {"drop_share": round(drop, 4), "max_drop": max_drop}
    if drop > max_drop:
        return CheckResult("chunk_count", False, False,
                           f"{current} chunks, down {drop:.0%} from {previous} in the previous run "
                           f"(more than {max_drop:.0%})", counts, severity="warn", details=details)
    return CheckResult("chunk_count", True, False, f"{current} chunks (previously {previous})", counts, details=details)


# ---------------------------------------------------------------- integrity


def unique_ids(chunks: pd.DataFrame) -> CheckResult:
    """No two chunks share an id, and every chunk's kind and granularity is one lectio knows."""
    import great_expectations as gx

    outcomes = expect(chunks[["chunk_id", "kind", "granularity"]], [
        gx.expectations.ExpectColumnValuesToBeUnique(column="chunk_id"),
        gx.expectations.ExpectColumnValuesToBeInSet(column="kind", value_set=sorted(KINDS)),
        gx.expectations.ExpectColumnValuesToBeInSet(column="granularity", value_set=sorted(GRANULARITIES)),
    ])
    in_set = "expect_column_values_to_be_in_set"
    failing = {"chunks sharing an id": failing_ids(outcomes, "expect_column_values_to_be_unique"),
               "chunks of an unknown kind": failing_ids(outcomes, in_set, "kind"),
               "chunks of an unknown granularity": failing_ids(outcomes, in_set, "granularity")}
    return result_of("unique_chunk_ids", True, failing,
                   f"all {len(chunks)} chunk ids are unique, of known kinds and granularities",
                   expectations=summaries(outcomes))


def verse_coverage(chunks: pd.DataFrame, structure: Any) -> CheckResult:
    """Every verse of a scripture source exactly once at verse granularity. The module's empty
    slots (verses a translation leaves out) are reported, not failed. A baseline ruleset without
    verse chunks (chapters, fixed windows) must still cover every verse at least once."""
    if not isinstance(structure, pd.DataFrame) or "ref" not in structure:
        return CheckResult("verse_coverage", True, False, "not a scripture source: nothing to cover")
    empty = structure.loc[structure["text"] == "", "ref"].tolist()
    expected = set(structure.loc[structure["text"] != "", "ref"])
    verses = chunks[chunks["granularity"] == "verse"]
    at_verse = not verses.empty
    pool = verses if at_verse else chunks
    seen = pd.Series([r for refs in pool["refs"] for r in refs], dtype=object).value_counts()
    missing = sorted(expected - set(seen.index))
    twice = sorted(seen[seen > 1].index) if at_verse else []
    unknown = sorted(set(seen.index) - expected)
    failing = {"verses without a chunk": missing, "verses in more than one verse chunk": twice,
               "refs that are no verse of the source": unknown}
    ok = f"all {len(expected)} verses present " + ("exactly once at verse granularity" if at_verse else "(no verse chunks: covered by larger chunks)")
    result = result_of("verse_coverage", False, failing, ok,
                     details={"empty_verse_slots": ", ".join(empty[:50]) or "none"})
    # The examples are verse refs here, which say more than chunk ids would.
    return replace(result, counts={**result.counts, "verses": len(expected), "empty_verse_slots": len(empty)})


def embedding_vectors(hashes: list[str], vectors: list, model_id: str = "") -> CheckResult:
    """Vectors (one per content hash, None where none is stored) of the model's dimension,
    finite and of unit length."""
    failing: dict[str, list[str]] = {"texts without an embedding": [], "vectors of the wrong dimension": [],
                                     "vectors with NaN or infinite values": [], "vectors not of unit length": []}
    shaped, shaped_hashes = [], []
    for h, v in zip(hashes, vectors):
        if v is None:
            failing["texts without an embedding"].append(h)
            continue
        # pgvector hands back its own Vector type over the binary protocol.
        v = np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float64)
        if v.shape != (DIMENSIONS,):
            failing["vectors of the wrong dimension"].append(h)
        else:
            shaped.append(v)
            shaped_hashes.append(h)
    if shaped:
        # One matrix: a large Bible has a hundred thousand vectors, too many for a Python loop of norms.
        matrix = np.stack(shaped)
        finite = np.isfinite(matrix).all(axis=1)
        norms = np.linalg.norm(np.where(np.isfinite(matrix), matrix, 0.0), axis=1)
        off_unit = finite & (np.abs(norms - 1.0) > UNIT_NORM_TOLERANCE)
        names = np.asarray(shaped_hashes, dtype=object)
        failing["vectors with NaN or infinite values"] = names[~finite].tolist()
        failing["vectors not of unit length"] = names[off_unit].tolist()
    return result_of("embedding_vectors", True, failing,
                   f"all {len(hashes)} vectors{' of ' + model_id if model_id else ''} have {DIMENSIONS} finite "
                   "dimensions and unit length",
                   details={"examples_are": "content hashes"})


def blocking_checks(chunks: pd.DataFrame, source: Source | None, structure: Any = None) -> list[CheckResult]:
    """The checks whose failure keeps a source's chunks out of every index."""
    return [permission_tags(chunks, source), header_presence(chunks, structure), unique_ids(chunks)]
