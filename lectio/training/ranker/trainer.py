"""Training the learned ranker (lectio.ranker) on the labelled query sets' dev parts.

Each dev query is searched as a caller searches it (its principals, its filters, the defaults),
with the learned-rank stage recording the features of the first `depth` fused hits; each hit is
graded by the share of its verses the labels name (Page.labels). The labels are read only here, as
targets: no feature says which verses they name. The trees are cross-validated by query (a query's hits never sit in
the fold that scores them), so every figure the record keeps is out of sample; then trained on
every recorded query and stored in the home under their fingerprint."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from lectio.evaluation.metrics import METRICS, LabelledQuery, score_query
from lectio.evaluation.migration_gate import MODEL_TOLERANCES, compare
from lectio.evaluation.querysets import Query
from lectio.ranker import features, model
from lectio.retrieval import SearchConfig
from lectio.retrieval.learned_rank import LearnedRankSettings, blend
from lectio.retrieval import DEFAULT_PRINCIPALS, Filters, MAX_QUERY_CHARS, SearchRequest, search
from lectio.training.gate import gains

SEED = 20261207
FOLDS = 5
# Small trees, few rounds: about 1,400 queries of 100 hits each, of which a few are relevant. Chosen
# on the dev parts' out-of-fold orders over 15 leaves of 40 hits and 300 rounds, which gained more
# recall on typed topics and lost budget recall beyond noise on Nave's and the catechism questions.
PARAMS = {"objective": "lambdarank", "metric": "ndcg", "eval_at": [10], "num_leaves": 7, "learning_rate": 0.05,
          "min_data_in_leaf": 100, "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1,
          "lambdarank_truncation_level": 30, "deterministic": True, "force_row_wise": True, "num_threads": 2,
          "verbose": -1, "seed": SEED}
ROUNDS = 100
# The sets it learns from by default: every project set but the long passages, whose queries are the
# corpus's own commentary entries; the entry itself, found at a cosine near 1, taught the trees to
# put the query's own text first (its dev MRR .48 -> .58) at the cost of Nave's budget recall.
NOT_LEARNED_FROM = ("long_passages",)
SHOWN = ("recall@20", "mrr", "ndcg@10", "budget_recall@1000")


@dataclass(frozen=True)
class Page:
    """One recorded query: its set, its labels, the features and hits of its first fused hits."""

    query_set: str
    query: LabelledQuery
    rows: np.ndarray
    hits: list

    @property
    def labels(self) -> np.ndarray:
        """Each hit's grade, by the share of its verses that are relevant: 3 for half or more, 2
        for a fifth, 1 for any, 0 for none. A chapter holding one relevant verse is not the
        answer a verse is, and budget recall charges it for every verse it brings: graded by
        "covers one" (a binary label), the trees preferred long hits and lost budget recall
        beyond noise on three sets' dev parts."""
        return np.asarray([_grade(set(hit.refs or ()), self.query.relevant) for hit in self.hits])


def _grade(refs: set[str], relevant: frozenset[str]) -> float:
    share = len(refs & relevant) / len(refs) if refs else 0.0
    return 3.0 if share >= 0.5 else 2.0 if share >= 0.2 else 1.0 if share > 0 else 0.0


def record(conn, query_sets: Mapping[str, Sequence[Query]], depth: int, version: str | None = None,
           progress: Callable[[int], None] = lambda done: None) -> list[Page]:
    """Every labelled query of `query_sets` searched in `version` (the live one when None) with its
    page's features recorded."""
    # In fused order, whatever ranker the gate let into the live version: the trees learn to order what fusion gives.
    config = SearchConfig().with_settings({"stages.learned_rank.record": True, "stages.learned_rank.depth": depth,
                                           "stages.learned_rank.model": ""})
    pages = []
    for name, queries in query_sets.items():
        for query in queries:
            labelled = _labelled(query)
            if labelled.relevant and (page := _recorded(conn, labelled, config, version)) is not None:
                pages.append(Page(name, labelled, *page))
            progress(1)
    return pages


def _labelled(query: Query) -> LabelledQuery:
    return LabelledQuery(query.id, query.query[:MAX_QUERY_CHARS], frozenset(query.relevant_set),
                         principals=tuple(query.principals), filters=dict(query.filters or {}))


def _recorded(conn, query: LabelledQuery, config: SearchConfig, version: str | None):
    """The features and hits the stage saw for the page this search returns: the last it ranked
    (a search narrowed to scripture reads an unfiltered page of its own first, unrecorded)."""
    request = SearchRequest(query.query, k=20, principals=query.principals or DEFAULT_PRINCIPALS,
                            filters=Filters(**(query.filters or {})), version=version, config=config)
    with features.recording() as pages:
        search(conn, request)
    return pages[-1] if pages else None


def fold_of(query_id: str, folds: int = FOLDS) -> int:
    """A query's fold, fixed by its id: the same split on every machine and every run."""
    return int.from_bytes(hashlib.sha256(f"fold:{query_id}".encode()).digest()[:4], "big") % folds


def fit(pages: Sequence[Page], rounds: int = ROUNDS):
    """Trees trained on `pages` (queries with no relevant hit teach nothing and are left out)."""
    import lightgbm

    taught = [page for page in pages if page.labels.any()]
    data = lightgbm.Dataset(np.vstack([page.rows for page in taught]),
                            label=np.concatenate([page.labels for page in taught]),
                            group=[len(page.hits) for page in taught], feature_name=list(features.NAMES))
    return lightgbm.train(PARAMS, data, num_boost_round=rounds)


def cross_validated(pages: Sequence[Page], folds: int = FOLDS, rounds: int = ROUNDS,
                    weight: float = LearnedRankSettings.weight) -> tuple[dict, dict]:
    """Per set, the reports (as lectio.evaluation.metrics.evaluate gives them) of the fused order
    and of the order the stage makes of it with `weight`, each page ordered by trees that never
    saw its query."""
    fused, learned = {}, {}
    for fold in range(folds):
        held = [page for page in pages if fold_of(page.query.id, folds) == fold]
        trees = fit([page for page in pages if fold_of(page.query.id, folds) != fold], rounds)
        for page in held:
            ordered = blend(page.hits, trees.predict(page.rows, num_threads=1).tolist(), weight)
            fused.setdefault(page.query_set, []).append(_scored(page.query, page.hits))
            learned.setdefault(page.query_set, []).append(_scored(page.query, ordered))
    return {name: _report(rows) for name, rows in fused.items()}, {name: _report(rows) for name, rows in learned.items()}


def _scored(query: LabelledQuery, hits: list) -> dict:
    return {"id": query.id, "query": query.query, **score_query(query, hits, 20), "top": [list(hit.refs or ())[:3] for hit in hits[:5]]}


def _report(rows: list[dict]) -> dict:
    overall = {metric: _mean(rows, metric) for metric in METRICS}
    return {"overall": overall | {"n": len(rows)}, "queries": rows}


def _mean(rows: list[dict], metric: str) -> float | None:
    values = [row[metric] for row in rows if row.get(metric) is not None]
    return round(float(np.mean(values)), 4) if values else None


def verdict(fused: dict, learned: dict) -> dict:
    """The gate's rule for a model (lectio.training.ranker.gate) on the out-of-fold reports: no guarded
    metric of any set drops beyond noise, and one gains beyond it somewhere."""
    table, differences, violations = compare(fused, learned, MODEL_TOLERANCES)
    gained = gains(table, MODEL_TOLERANCES)
    if not gained:
        violations.append("no guarded metric gained beyond noise on any set")
    reason = "; ".join(violations) or f"no guarded metric lost beyond noise; gained beyond it: {', '.join(gained)}"
    return {"decision": "refuse" if violations else "switch", "reason": reason,
            "metrics": {name: {m: row for m, row in rows.items() if m in (*SHOWN, "n")} for name, rows in table.items()},
            "differences": differences[:20]}


def train(home: Path, pages: Sequence[Page], about: dict, folds: int = FOLDS, rounds: int = ROUNDS,
          unseen: Callable[[str], tuple[dict, dict]] | None = None) -> dict:
    """Cross-validates, trains on every page and stores the trees with the gate's verdict (lectio
    .training.ranker.gate reads it): on the out-of-fold orders of the sets learned from, and, where
    `unseen` is given, on the sets it did not learn from, as `unseen(trees' id)` scores them
    (their reports without the trees and with them, by set: out of sample whole). The stored record."""
    fused, learned = cross_validated(pages, folds, rounds) if folds > 1 else ({}, {})
    trees = fit(pages, rounds)
    record = {**about, "queries": len(pages), "folds": folds, "rounds": rounds, "params": PARAMS}
    model_id = model.store(home, trees.model_to_string(), record)
    if unseen is not None:
        without, with_trees = unseen(model_id)
        fused, learned = fused | without, learned | with_trees
    judged = verdict(fused, learned) if fused else None
    model.store(home, trees.model_to_string(), record | {"cross_validated": judged})
    return {**record, "cross_validated": judged, "id": model_id}
