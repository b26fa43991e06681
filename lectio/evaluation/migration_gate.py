"""Re-chunking as a parallel index migration: score, gate, switch, retain.

A candidate index version is built beside the live one (`lectio run --candidate`, `lectio
migrate`, or the Dagster `migrate_index` job) while the live one keeps answering. This module
decides whether the candidate replaces it. Both versions are scored on the same labelled query
sets, which are keyed by verse refs and text and never by chunk ids, so the labels survive
re-chunking. The candidate goes live only when

- no guarded metric of any query set drops by more than its tolerance (recall@20 by 0.03 by
  default, recall@20 being the usual measure of a chunking change),
- its chunks pass every blocking data-quality check (lectio.quality.checks: permission tags, headers,
  unique ids), read back from the candidate's own table, and
- it holds every source the live version holds (a failed or rejected source is not a rule change).

The decision, the metrics side by side and the queries whose scores moved are recorded on the
versions (`index_versions.metrics`, shown by `lectio index list`). The switch is
`versions.switch_live`: one transaction. Retention then keeps the live version, the rollback target
and the most recent other ready versions, and drops the rest.

No Dagster here: assets/migration.py wraps these functions as assets and an asset check.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import psycopg

from lectio.index import versions
from lectio.index.retention import DEFAULT_KEEP, retain
from lectio.evaluation.metrics import METRICS, evaluate_index
from lectio.evaluation.paired import paired_interval
from lectio.evaluation.querysets import PARTS, Query, load_queries, select_part
from lectio.settings import PROJECT_ROOT
from lectio.sources import Source, SourceError

# The gate decides which rules go live, so it reads the dev parts only (the test parts are for
# reporting). Besides the hand-written theology set, the readers' own questions and typed topics,
# labelled outside the project: a chunking that answered quotations and lost readers' questions
# would otherwise pass.
DEFAULT_QUERY_SETS = tuple(f"{PROJECT_ROOT / 'data' / 'queries' / name}.jsonl:dev"
                           for name in ("theology", "henry_catechism", "openbible_topics"))
# Metric → the largest drop allowed, on the metrics' 0–1 scale. Besides recall@20, the usual
# measure of a chunking change, recall within the token budget is guarded: a coarser chunking
# covers more verses per hit, so recall@20 alone rewards chunks that spend the budget (budget
# recall is what compares granularities fairly). On a small corpus a chapter per chunk even
# keeps recall@20 at 1.0; the budget is what it pays. Every other metric is reported side by
# side and guarded only when asked.
DEFAULT_TOLERANCES = {"recall@20": 0.03, "budget_recall@1000": 0.05}
# A change of model (an adapted embedder, a reranker) keeps the chunks and changes the order: no
# guarded metric may drop beyond noise at all. Under DEFAULT_TOLERANCES an adapted embedder that
# cost theology's dev recall@20 .654 -> .627 (interval -.051 to -.005) and quotations' MRR beyond
# noise was switched in.
MODEL_TOLERANCES = {"recall@20": 0.0, "mrr": 0.0, "ndcg@10": 0.0, "budget_recall@1000": 0.0}
# The project's own labelled query sets: the only ones a run launched from the UI may gate on (a
# run's config naming any file on the host scored the candidate on whatever that file said).
QUERY_SETS_DIR = PROJECT_ROOT / "data" / "queries"
# How the gate scores both versions: a run's config may not change it (a lexical-only gate never
# looks at the embeddings, so a model migration would pass it untested).
DEFAULT_K, DEFAULT_MODE = 20, "hybrid"
# Listed per query whenever they change, guarded or not: the main metric for comparing chunkings.
ALWAYS_LISTED = ("recall@20",)


@dataclass
class GateResult:
    candidate: str
    live: str | None
    decision: str  # "switch" | "refuse" | "unchanged" (the candidate already is the live one)
    reason: str
    # query set → metric → {"live", "candidate", "delta", "tolerance", "ok"}
    metrics: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # Queries whose listed metrics changed: {"query_set", "id", "query", "changes": {metric:
    # {"live", "candidate"}}, "live_top", "candidate_top"}.
    differences: list[dict[str, Any]] = field(default_factory=list)
    quality_failures: list[str] = field(default_factory=list)
    dropped_sources: list[str] = field(default_factory=list)
    tolerances: dict[str, float] = field(default_factory=dict)
    switched: bool = False  # set by apply()
    retired: list[str] = field(default_factory=list)  # versions retention dropped, set by apply()

    @property
    def passed(self) -> bool:
        return self.decision != "refuse"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "GateResult":
        return cls(**{k: v for k, v in data.items() if k != "passed"})

    def to_json(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "passed": self.passed,
            "reason": self.reason,
            "live": self.live,
            "candidate": self.candidate,
            "switched": self.switched,
            "tolerances": self.tolerances,
            "metrics": self.metrics,
            "differences": self.differences,
            "quality_failures": self.quality_failures,
            "dropped_sources": self.dropped_sources,
            "retired": self.retired,
        }


# ---------------------------------------------------------------- scoring


def split_spec(spec: Path | str) -> tuple[Path, str]:
    """A query set as the gate is given it: "FILE" (every query) or "FILE:dev" / "FILE:test"
    (that part of it)."""
    text = str(spec)
    head, _, tail = text.rpartition(":")
    return (Path(head), tail) if head and tail in PARTS else (Path(text), "all")


def load_query_sets(paths: Sequence[Path | str] | None = None) -> dict[str, list[Query]]:
    """Query sets by name (the file's stem), default DEFAULT_QUERY_SETS."""
    sets: dict[str, list[Query]] = {}
    for spec in paths or DEFAULT_QUERY_SETS:
        path, part = split_spec(spec)
        if path.stem in sets:
            raise ValueError(f"two query sets are named {path.stem!r}; rename one of the files")
        sets[path.stem] = select_part(load_queries(path), part)
    if not sets:
        raise ValueError("no query sets to score the index with")
    return sets


def score(conn: psycopg.Connection, version: str, query_sets: Mapping[str, Sequence[Query]], *, k: int = 20,
          mode: str = "hybrid") -> dict[str, dict]:
    """`lectio eval` reports of one version, per query set."""
    from lectio.retrieval import SearchConfig

    config = SearchConfig.from_options(mode=mode)
    return {name: evaluate_index(conn, queries, k=k, version=version, config=config) for name, queries in query_sets.items()}


def evaluation_record(reports: Mapping[str, dict], *, k: int, mode: str) -> dict[str, Any]:
    """What a version's `metrics` keeps of its reports: the overall scores per query set."""
    return {
        "query_sets": {name: report["overall"] for name, report in reports.items()},
        "k": k,
        "mode": mode,
        "evaluated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


# ---------------------------------------------------------------- the gate


def check_tolerances(tolerances: Mapping[str, float]) -> dict[str, float]:
    unknown = sorted(set(tolerances) - set(METRICS))
    if unknown:
        raise ValueError(f"no metric {', '.join(unknown)}; metrics are {', '.join(METRICS)}")
    # NaN compares false with every drop, so it would guard nothing, as would infinity.
    unbounded = sorted(m for m, t in tolerances.items() if not math.isfinite(t))
    if unbounded:
        raise ValueError(f"a tolerance is the largest drop allowed, a finite number: {', '.join(unbounded)}")
    negative = sorted(m for m, t in tolerances.items() if t < 0)
    if negative:
        raise ValueError(f"a tolerance is the largest drop allowed and cannot be negative: {', '.join(negative)}")
    return {m: float(t) for m, t in tolerances.items()}


# ---------------------------------------------------------------- what a run's config may ask
# A run launched from the UI (its config, its tags) may only make the gate stricter than the
# deployment's defaults; the operator's own `lectio migrate` flags are not held to this
# (docs/operations.md, *What a run may change*).


def tolerance_floor(model_change: bool) -> dict[str, float]:
    """The loosest tolerances a run may ask for: MODEL_TOLERANCES where the candidate embeds with
    another model than the live version, DEFAULT_TOLERANCES otherwise."""
    return dict(MODEL_TOLERANCES if model_change else DEFAULT_TOLERANCES)


def narrowed_tolerances(tolerances: Mapping[str, float] | None, floor: Mapping[str, float]) -> dict[str, float]:
    """`tolerances` where they only tighten `floor` (every metric it guards still guarded, none
    allowed a larger drop; more metrics may be guarded); None: `floor` itself."""
    if tolerances is None:
        return dict(floor)
    tolerances = check_tolerances(tolerances)
    dropped = [m for m in floor if m not in tolerances]
    looser = [f"{m} {tolerances[m]:g} (at most {floor[m]:g})" for m in floor if tolerances.get(m, 0) > floor[m]]
    if dropped or looser:
        said = [f"{', '.join(dropped)} no longer guarded"] * bool(dropped) + looser
        raise ValueError(f"may only tighten the gate's defaults, not loosen them: {'; '.join(said)}")
    return tolerances


def narrowed_keep(keep: int) -> int:
    """`keep` where it keeps at least the default number of versions."""
    if keep < DEFAULT_KEEP:
        raise ValueError(f"{keep} keeps fewer versions than the default {DEFAULT_KEEP}; a run may keep more, never fewer")
    return keep


def narrowed_scoring(k: int, mode: str) -> None:
    """Refuses a run's other way of scoring: the gate measures as the deployment's defaults do."""
    if (k, mode) != (DEFAULT_K, DEFAULT_MODE):
        raise ValueError(f"the gate scores the top {DEFAULT_K} in {DEFAULT_MODE} mode; a run may not change "
                         f"that (asked: k={k}, mode={mode!r})")


def narrowed_query_sets(specs: Sequence[str]) -> list[str]:
    """`specs` where each is one of the project's sets (a .jsonl file of QUERY_SETS_DIR, whole or
    a part) and every default set is still among them (its part or its whole file), as absolute
    specs; empty: the defaults."""
    given = [_project_set(spec) for spec in specs] or [_project_set(spec) for spec in DEFAULT_QUERY_SETS]
    for path, part in (_project_set(spec) for spec in DEFAULT_QUERY_SETS):
        if (path, part) not in given and (path, "all") not in given:
            raise ValueError(f"leave out {path.name}:{part}, a set the gate guards by default; "
                             "a run may add the project's sets, never drop one")
    return [str(path) if part == "all" else f"{path}:{part}" for path, part in given]


def _project_set(spec: Path | str) -> tuple[Path, str]:
    path, part = split_spec(spec)
    folder = QUERY_SETS_DIR.resolve()
    # Relative to the project, as a user would write it; resolved, so no link or '..' leads out.
    resolved = (path if path.is_absolute() else PROJECT_ROOT / path).resolve()
    if resolved.parent != folder or resolved.suffix != ".jsonl" or not resolved.is_file():
        raise ValueError(f"{str(spec)[:200]!r} is not one of the project's query sets (the .jsonl files of {folder})")
    return resolved, part


def model_change(conn: psycopg.Connection, candidate: str | None) -> bool:
    """Whether `candidate` holds other vectors than the live version: another model or other
    numerics (the runtime alone gives the same vectors)."""
    live = versions.live_version(conn)
    if not candidate or not live or candidate == live:
        return False
    ids = [getattr(versions.get_version(conn, v), "model_id", "") or "" for v in (live, candidate)]
    return not versions.same_vectors(*ids)


def parse_tolerances(recall: float | None, overrides: Sequence[str],
                     defaults: Mapping[str, float] = DEFAULT_TOLERANCES) -> dict[str, float]:
    """`defaults` with recall@20's tolerance replaced by `recall` where given, then each
    'METRIC=DROP' or 'METRIC=off' (no longer guarded) applied in turn, as a user writes them."""
    tolerances = dict(defaults)
    if recall is not None:
        tolerances["recall@20"] = recall
    for item in overrides:
        metric, _, value = item.partition("=")
        if not value:
            raise ValueError(f"a tolerance is METRIC=DROP or METRIC=off, not {item!r}")
        if value.strip().lower() == "off":
            tolerances.pop(metric.strip(), None)
            continue
        try:
            tolerances[metric.strip()] = float(value)
        except ValueError:
            raise ValueError(f"the tolerance for {metric}: {value!r} is not a number or 'off'") from None
    return tolerances


def compare(live: Mapping[str, dict], candidate: Mapping[str, dict], tolerances: Mapping[str, float]):
    """Metrics side by side per query set, the queries whose listed metrics changed, and the
    guarded metrics that dropped too far (as sentences).

    A guarded metric refuses the candidate only when its drop is beyond the tolerance and real:
    the 95 % interval of the mean per-query change (a paired bootstrap over the queries both
    versions scored) lies below zero. A drop beyond the tolerance that the interval cannot tell
    from no change is noise, reported as such and not refused."""
    listed = list(dict.fromkeys([*ALWAYS_LISTED, *tolerances]))
    table: dict[str, dict[str, dict[str, Any]]] = {}
    differences: list[dict[str, Any]] = []
    violations: list[str] = []
    for name in candidate:
        if name not in live:
            raise ValueError(f"query set {name!r} was scored on the candidate only")
        old, new = live[name]["overall"], candidate[name]["overall"]
        rows = {}
        for metric in [*METRICS, "n"]:
            a, b = old.get(metric), new.get(metric)
            delta = round(b - a, 4) if a is not None and b is not None else None
            tolerance = tolerances.get(metric)
            interval = paired_interval(live[name]["queries"], candidate[name]["queries"], metric) if metric != "n" else None
            noise = interval is None or interval[0] <= 0 <= interval[1]
            beyond = tolerance is not None and delta is not None and delta < -tolerance - 1e-9
            ok = not beyond or (interval is not None and interval[1] >= 0)
            rows[metric] = {"live": a, "candidate": b, "delta": delta, "tolerance": tolerance, "ok": ok,
                            "ci95": interval, "noise": noise}
            if not ok:
                violations.append(f"{name}: {metric} fell from {a:.4f} to {b:.4f} ({delta:+.4f}, 95% interval "
                                  f"{interval[0]:+.4f} to {interval[1]:+.4f}; at most -{tolerance:.4f} allowed)")
        table[name] = rows
        before = {q["id"]: q for q in live[name]["queries"]}
        for q in candidate[name]["queries"]:
            p = before.get(q["id"])
            if p is None:
                continue
            changes = {m: {"live": p[m], "candidate": q[m]} for m in listed if p.get(m) != q.get(m)}
            if changes:
                differences.append({"query_set": name, "id": q["id"], "query": q["query"], "changes": changes,
                                    "live_top": p.get("top"), "candidate_top": q.get("top")})
    # Largest losses first: what a reader of a refusal wants to see.
    differences.sort(key=lambda d: min((c["candidate"] or 0) - (c["live"] or 0) for c in d["changes"].values()))
    return table, differences, violations


def blocking_quality_failures(conn: psycopg.Connection, version: str,
                              sources: Mapping[str, Source | SourceError] | None) -> list[str]:
    """The blocking checks (lectio.quality.admission) over the chunks as stored in the version's table.

    Building a version already refuses sources that fail them (lectio.index.build); running them on
    what the table holds covers versions built before those checks existed, and any path into a
    table that skipped them."""
    from lectio.quality import admission

    chunks = versions.version_chunks(conn, version)
    if chunks.empty:
        return [f"{version} holds no chunks"]
    rejected = admission.admit(chunks, sources)
    return [f"{sid}: {r.name} ({r.description})" for sid, results in sorted(rejected.items()) for r in results]


def decide(live: str | None, candidate: str, live_reports: Mapping[str, dict] | None,
           candidate_reports: Mapping[str, dict], tolerances: Mapping[str, float],
           quality_failures: Sequence[str] = (), dropped_sources: Sequence[str] = ()) -> GateResult:
    """The gate, on reports already computed; pure, so its rule is testable on its own."""
    tolerances = check_tolerances(tolerances)
    result = GateResult(candidate, live, "refuse", "", tolerances=dict(tolerances),
                        quality_failures=list(quality_failures), dropped_sources=list(dropped_sources))
    if live is not None and live_reports is not None:
        result.metrics, result.differences, violations = compare(live_reports, candidate_reports, tolerances)
    else:
        violations = []
    reasons = []
    if quality_failures:
        reasons.append("blocking quality checks failed: " + "; ".join(quality_failures))
    if dropped_sources:
        reasons.append(f"the candidate lacks sources the live index holds: {', '.join(dropped_sources)}")
    reasons += violations
    if reasons:
        result.reason = f"{candidate} refused; {live} stays live: " + "; ".join(reasons)
    elif live == candidate:
        result.decision, result.reason = "unchanged", f"{candidate} already is the live version"
    elif live is None:
        result.decision, result.reason = "switch", f"nothing is live yet; {candidate} goes live"
    else:
        guarded = ", ".join(f"{m} within {t}" for m, t in tolerances.items()) or "nothing guarded"
        result.decision, result.reason = "switch", f"{candidate} is no worse than {live} ({guarded})"
        noisy = [f"{name}: {metric} {row['delta']:+.4f} (95% interval {row['ci95'][0]:+.4f} to {row['ci95'][1]:+.4f})"
                 for name, rows in result.metrics.items() for metric, row in rows.items()
                 if row.get("tolerance") is not None and row["delta"] is not None
                 and row["delta"] < -row["tolerance"] and row.get("ci95")]
        if noisy:
            result.reason += "; drops beyond tolerance but within noise: " + "; ".join(noisy)
    return result


@dataclass(frozen=True)
class Scoring:
    """What the gate scores both versions on: these query sets, the top `k`, in `mode`.
    `reports` (version → query set → report) are used where given, so an evaluation already run
    (the Dagster evaluation asset) is not run twice."""

    query_sets: Mapping[str, Sequence[Query]]
    k: int = 20
    mode: str = "hybrid"
    reports: Mapping[str, Mapping[str, dict]] = field(default_factory=dict)


def gate(conn: psycopg.Connection, candidate: str, scoring: Scoring, *,
         tolerances: Mapping[str, float] = DEFAULT_TOLERANCES,
         sources: Mapping[str, Source | SourceError] | None = None) -> GateResult:
    """Score the live version and the candidate on the same query sets and decide."""
    info = versions.get_version(conn, candidate)
    if info is None:
        raise ValueError(f"no index version {candidate!r}")
    if info.status != "ready":
        raise ValueError(f"index version {candidate!r} is {info.status}, not ready")
    live = versions.live_version(conn)
    query_sets, k, mode = scoring.query_sets, scoring.k, scoring.mode
    reports = dict(scoring.reports)

    def reports_of(version):
        if version not in reports or set(reports[version]) != set(query_sets):
            reports[version] = score(conn, version, query_sets, k=k, mode=mode)
        return reports[version]

    candidate_reports = reports_of(candidate)
    live_reports = reports_of(live) if live and live != candidate else candidate_reports if live else None
    dropped = sorted(set(versions.get_version(conn, live).sources) - set(info.sources)) if live else []
    failures = blocking_quality_failures(conn, candidate, sources)
    result = decide(live, candidate, live_reports, candidate_reports, tolerances, failures, dropped)
    record(conn, result, {candidate: candidate_reports, **({live: live_reports} if live else {})}, k=k, mode=mode)
    return result


def record(conn: psycopg.Connection, result: GateResult, reports: Mapping[str, Mapping[str, dict]], *, k: int,
           mode: str) -> None:
    """Each version's evaluation, and the gate's verdict on the candidate, on index_versions."""
    for version, by_set in reports.items():
        versions.merge_metrics(conn, version, {"evaluation": evaluation_record(by_set, k=k, mode=mode)})
    versions.merge_metrics(conn, result.candidate, {"gate": {
        "decision": result.decision,
        "reason": result.reason,
        "against": result.live,
        "tolerances": result.tolerances,
        "queries_changed": len(result.differences),
        "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }})


# ---------------------------------------------------------------- switch


def apply(conn: psycopg.Connection, result: GateResult, keep: int = DEFAULT_KEEP) -> GateResult:
    """Switch the candidate in when the gate passed (one transaction), then apply retention."""
    if result.decision == "switch":
        versions.switch_live(conn, result.candidate)
        result.switched = True
    result.retired = retain(conn, keep)
    return result
