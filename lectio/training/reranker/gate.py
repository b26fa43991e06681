"""The reranker's gate: the live index is scored on the labelled query sets as it is searched now
and as it would be searched with the change, and the change is made only if no guarded metric
drops beyond its tolerance and beyond noise. A reranker reorders a page, so what it can cost is
the order: every metric of RERANKER_TOLERANCES is guarded, at no drop beyond noise at all, and a
reranker goes on only when it also gains beyond noise on at least one of them, on some set (a
model that changes nothing measurable is not worth its time per search). A refused reranker stays
trained, to inspect or to overrule with --force."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from lectio.evaluation.metrics import evaluate_index
from lectio.evaluation.migration_gate import MODEL_TOLERANCES, check_tolerances, compare
from lectio.evaluation.querysets import Query
from lectio.reranker.model import REGISTRY
from lectio.training.gate import Verdict, Wing, gains, keep, live, searched_with

RERANKER_TOLERANCES = MODEL_TOLERANCES
RERANKER = Wing(REGISTRY, "stages.rerank.model", "reranker_gate")


def gate(conn, home: Path, candidate: str | None, query_sets: Mapping[str, Sequence[Query]],
         tolerances: Mapping[str, float] = RERANKER_TOLERANCES, force: bool = False,
         require_gain: bool = True) -> Verdict:
    """Score, decide and (unless refused) make `candidate` (a trained id, "latest", or None for
    off) the home's reranker. Turning one on also needs a gain beyond noise (`require_gain`)."""
    wing = RERANKER
    tolerances = check_tolerances(tolerances)
    candidate = wing.registry.find(home, candidate).name if candidate else None
    version = live(conn)
    before = version.rankers.get(wing.setting)
    if candidate == before:
        return Verdict(before, candidate, "unchanged", f"{candidate or f'no {wing.registry.what}'} is already in use")
    now = {name: evaluate_index(conn, qs, config=searched_with(before, wing)) for name, qs in query_sets.items()}
    then = {name: evaluate_index(conn, qs, config=searched_with(candidate, wing)) for name, qs in query_sets.items()}
    metrics, differences, violations = compare(now, then, tolerances)
    gained = gains(metrics, tolerances)
    if candidate and require_gain and not gained:
        violations.append("no guarded metric gained beyond noise on any set")
    reason = "; ".join(violations) if violations else \
        "no guarded metric lost beyond noise" + (f"; gained beyond it: {', '.join(gained)}" if gained else "")
    verdict = Verdict(before, candidate, "refuse" if violations and not force else "switch", reason, metrics,
                      differences)
    keep(conn, version.version, wing, verdict)
    return verdict
