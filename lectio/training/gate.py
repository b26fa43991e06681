"""Turning a trained reranker or learned ranker (a Wing: each kind's registry and the search setting
that names it) on or off for a home's searches is a migration like any other:
the live index is scored on the labelled query sets as it is searched now and as it would be
searched with the change, and the change is made only if no guarded metric drops beyond its
tolerance and beyond noise (lectio.evaluation.migration_gate.compare, the rule every index
migration passes). A reranker reorders a page, so what it can cost is the order: every metric of
RERANKER_TOLERANCES is guarded, at no drop beyond noise at all, and a reranker goes on only when it
also gains beyond noise on at least one of them, on some set (a model that changes nothing
measurable is not worth its time per search). A refused reranker stays trained, to inspect or to overrule with --force.
The choice is the live version's (index_versions.rankers: what its searches read where a setting
says "active"; a version built later starts from it), and the verdict is kept on its metrics,
which `lectio index list` shows."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lectio.evaluation.metrics import evaluate_index
from lectio.evaluation.migration_gate import MODEL_TOLERANCES, check_tolerances, compare
from lectio.evaluation.querysets import Query
from lectio.index import versions
from lectio.ranker.model import REGISTRY as RANKERS
from lectio.registry.models import Registry
from lectio.reranker.model import REGISTRY as RERANKERS
from lectio.retrieval import SearchConfig


RERANKER_TOLERANCES = MODEL_TOLERANCES


@dataclass(frozen=True)
class Wing:
    """One kind of trained model a search can read: where the home keeps it, the search setting
    that names it, and the key its verdict is kept under on the live version."""

    registry: Registry
    setting: str
    verdict_key: str


RERANKER = Wing(RERANKERS, "stages.rerank.model", "reranker_gate")
RANKER = Wing(RANKERS, "stages.learned_rank.model", "ranker_gate")


@dataclass
class RerankerVerdict:
    before: str | None  # the reranker searches used (None: none)
    candidate: str | None
    decision: str  # "switch", "refuse" or "unchanged"
    reason: str
    metrics: dict = field(default_factory=dict)
    differences: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"before": self.before, "candidate": self.candidate, "decision": self.decision, "reason": self.reason,
                "metrics": self.metrics, "differences": self.differences[:20]}


def searched_with(model: str | None, wing: Wing = RERANKER) -> SearchConfig:
    return SearchConfig().with_settings({wing.setting: model or ""})


def gate(conn, home: Path, candidate: str | None, query_sets: Mapping[str, Sequence[Query]],
         tolerances: Mapping[str, float] = RERANKER_TOLERANCES, force: bool = False,
         require_gain: bool = True) -> RerankerVerdict:
    """Score, decide and (unless refused) make `candidate` (a trained id, "latest", or None for
    off) the home's reranker. Turning one on also needs a gain beyond noise (`require_gain`)."""
    wing = RERANKER
    tolerances = check_tolerances(tolerances)
    candidate = wing.registry.find(home, candidate).name if candidate else None
    live = _live(conn)
    before = live.rankers.get(wing.setting)
    if candidate == before:
        return RerankerVerdict(before, candidate, "unchanged",
                               f"{candidate or f'no {wing.registry.what}'} is already in use")
    now = {name: evaluate_index(conn, qs, config=searched_with(before, wing)) for name, qs in query_sets.items()}
    then = {name: evaluate_index(conn, qs, config=searched_with(candidate, wing)) for name, qs in query_sets.items()}
    metrics, differences, violations = compare(now, then, tolerances)
    gained = gains(metrics, tolerances)
    if candidate and require_gain and not gained:
        violations.append("no guarded metric gained beyond noise on any set")
    reason = "; ".join(violations) if violations else \
        "no guarded metric lost beyond noise" + (f"; gained beyond it: {', '.join(gained)}" if gained else "")
    verdict = RerankerVerdict(before, candidate, "refuse" if violations and not force else "switch", reason, metrics,
                              differences)
    _keep(conn, live.version, wing, verdict)
    return verdict


def gate_ranker(conn, home: Path, candidate: str | None, force: bool = False) -> RerankerVerdict:
    """Make `candidate` (a trained ranker's id, "latest", or None for off) the home's learned
    ranker, by the verdict its training reached on the dev parts' out-of-fold orders
    (lectio.training.ranker.verdict): scored again on the dev parts it learned from, it would be
    judged in sample."""
    registry, live = RANKER.registry, _live(conn)
    before = live.rankers.get(RANKER.setting)
    judged = {"decision": "switch", "reason": "turned off", "metrics": {}, "differences": []}
    if candidate:
        folder = registry.find(home, candidate)
        candidate = folder.name
        judged = json.loads((folder / registry.record).read_text()).get("cross_validated") or {
            "decision": "refuse", "reason": "trained without cross-validation: nothing says it is no worse"}
    if candidate == before:
        return RerankerVerdict(before, candidate, "unchanged", f"{candidate or 'no ranker'} is already in use")
    decision = "switch" if judged["decision"] == "switch" or force else "refuse"
    verdict = RerankerVerdict(before, candidate, decision, judged["reason"], judged.get("metrics", {}),
                              judged.get("differences", []))
    _keep(conn, live.version, RANKER, verdict)
    return verdict


def _live(conn) -> versions.IndexVersion:
    live = versions.get_version(conn, None)
    if live is None:
        raise ValueError("no live index yet: run `lectio run` first")
    return live


def _keep(conn, live: str, wing: Wing, verdict: RerankerVerdict) -> None:
    """The verdict on the live version's metrics and, where it switches, the choice on its record,
    in one transaction: a search never reads a choice without its evidence."""
    decided = {"decided_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    with conn.transaction():
        if verdict.decision == "switch":
            versions.choose_ranker(conn, live, wing.setting, verdict.candidate)
        versions.merge_metrics(conn, live, {wing.verdict_key: verdict.to_json() | decided
                                            | {"metrics": _overall(verdict.metrics)}})


def gains(metrics: dict, guarded: Mapping[str, float]) -> list[str]:
    """The set and metric of each guarded change whose 95 % interval lies above zero."""
    return [f"{name} {metric} {row['delta']:+.4f}" for name, rows in metrics.items() for metric, row in rows.items()
            if metric in guarded and row.get("ci95") and row["ci95"][0] > 0]


def _overall(metrics: dict) -> dict:
    """Per set, each metric's before and after: what a version's record keeps of the comparison."""
    return {name: {m: [row["live"], row["candidate"]] for m, row in rows.items() if m != "n"}
            for name, rows in metrics.items()}
