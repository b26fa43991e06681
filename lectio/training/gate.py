"""What every trained model's gate shares: a Wing (a kind's registry and the search setting that
names it), the verdict, and keeping it. Turning a trained reranker or learned ranker on or off for
a home's searches is a migration like any other, and each kind's gate (lectio.training.reranker.gate,
lectio.training.ranker.gate) decides by the rule every index migration passes
(lectio.evaluation.migration_gate.compare). The choice is the live version's (index_versions.rankers:
what its searches read where a setting says "active"; a version built later starts from it), and
the verdict is kept on its metrics, which `lectio index list` shows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from lectio.index import versions
from lectio.registry.models import Registry
from lectio.retrieval import SearchConfig


@dataclass(frozen=True)
class Wing:
    """One kind of trained model a search can read: where the home keeps it, the search setting
    that names it, and the key its verdict is kept under on the live version."""

    registry: Registry
    setting: str
    verdict_key: str


@dataclass
class Verdict:
    before: str | None  # the model searches used (None: none)
    candidate: str | None
    decision: str  # "switch", "refuse" or "unchanged"
    reason: str
    metrics: dict = field(default_factory=dict)
    differences: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"before": self.before, "candidate": self.candidate, "decision": self.decision, "reason": self.reason,
                "metrics": self.metrics, "differences": self.differences[:20]}


def searched_with(model: str | None, wing: Wing) -> SearchConfig:
    return SearchConfig().with_settings({wing.setting: model or ""})


def live(conn) -> versions.IndexVersion:
    """The live version, whose searches a gate decides for."""
    found = versions.get_version(conn, None)
    if found is None:
        raise ValueError("no live index yet: run `lectio run` first")
    return found


def keep(conn, version: str, wing: Wing, verdict: Verdict) -> None:
    """The verdict on the live version's metrics and, where it switches, the choice on its record,
    in one transaction: a search never reads a choice without its evidence."""
    decided = {"decided_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    with conn.transaction():
        if verdict.decision == "switch":
            versions.choose_ranker(conn, version, wing.setting, verdict.candidate)
        versions.merge_metrics(conn, version, {wing.verdict_key: verdict.to_json() | decided
                                               | {"metrics": _overall(verdict.metrics)}})


def gains(metrics: dict, guarded: Mapping[str, float]) -> list[str]:
    """The set and metric of each guarded change whose 95 % interval lies above zero."""
    return [f"{name} {metric} {row['delta']:+.4f}" for name, rows in metrics.items() for metric, row in rows.items()
            if metric in guarded and row.get("ci95") and row["ci95"][0] > 0]


def _overall(metrics: dict) -> dict:
    """Per set, each metric's before and after: what a version's record keeps of the comparison."""
    return {name: {m: [row["live"], row["candidate"]] for m, row in rows.items() if m != "n"}
            for name, rows in metrics.items()}
