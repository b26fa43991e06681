"""The index migration's assets: thin wrappers over lectio.evaluation.migration_gate, in the
asset group `migration` (the group is this module's, given as it is loaded: assets/__init__.py).

Lineage: … → search_index → index_evaluation → live_index.

- `index_evaluation` scores the live version and the candidate on the labelled query sets and
  shows every version's metrics side by side, with deltas against the live one (the
  evaluation asset; other retained versions show the scores stored when they were evaluated).
- `live_index` is the gate and the switch: it decides from the evaluation, switches the
  candidate in when it passes, applies retention, and reports the decision as the asset check
  `recall_gate`, which fails (with the queries that moved) when the candidate is refused, so
  the failed-check alert sensor reports it.

Neither is partitioned, so both are declared once, here; the jobs that run them, `migrate_index`
and `gate_candidate`, are pipelines/jobs.py's.
"""


from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    MetadataValue,
    Output,
    asset,
)

from assets.gate_settings import (EvaluationConfig, GateConfig, keep_for, query_sets_for, refuse_loosening,
                                  tolerances_for)
from assets.source_assets import OWNERS
from lectio.evaluation import migration_gate, migration_report
from lectio.index import retention, versions
from lectio.evaluation.metrics import METRICS
from resources import CorpusResource, DatabaseResource

GATE_CHECK = "recall_gate"
# Short column names for the side-by-side table in the UI.
_SHORT = {"recall@5": "R@5", "recall@10": "R@10", "recall@20": "R@20", "precision@5": "P@5", "mrr": "MRR",
          "ndcg@10": "nDCG@10", "negative_recall": "neg", "qualifier_presence": "qual", "budget_recall@1000": "R@1k tok"}


@asset(kinds={"postgres"}, owners=OWNERS)
def index_evaluation(context: AssetExecutionContext, config: EvaluationConfig, database: DatabaseResource,
                     search_index: dict) -> dict:
    """The live index and the candidate scored on the labelled query sets (recall, precision, MRR, nDCG, budget recall),
    every version side by side with deltas against the live one. Filled by `lectio migrate` (or the jobs
    migrate_index and gate_candidate), and by `lectio run` only when the chunking rules changed: "Never
    materialized" until the first migration."""
    built = (search_index or {}).get("version")
    with database.connect() as conn:
        # Before anything is scored: a launch that would loosen the gate is refused here
        # (gate_candidate's first step; migrate_index's search_index refused it already).
        refuse_loosening(context, built, migration_gate.model_change(conn, config.candidate or built))
        query_sets = migration_gate.load_query_sets(query_sets_for(config))
        live = versions.live_version(conn)
        candidate = config.candidate or built
        if candidate == live:
            candidate = None
        reports = {}
        for version in filter(None, (live, candidate)):
            context.log.info(f"scoring {version} on {', '.join(query_sets)}")
            reports[version] = migration_gate.score(conn, version, query_sets, k=config.k, mode=config.mode)
            versions.merge_metrics(conn, version, {
                "evaluation": migration_gate.evaluation_record(reports[version], k=config.k, mode=config.mode)})
        listed = versions.list_versions(conn)
    metadata = {
        "live": live or "none",
        "candidate": candidate or "none",
        "versions": MetadataValue.md(_versions_markdown(listed, reports, live, candidate, list(query_sets))),
    }
    # Numbers of the live version, so the UI plots them across materialisations.
    for name, report in reports.get(live, {}).items():
        for metric in ("recall@20", "mrr", "ndcg@10", "budget_recall@1000", "qualifier_presence"):
            value = report["overall"].get(metric)
            if value is not None:
                metadata[f"live {name} {metric}"] = float(value)
    context.add_output_metadata(metadata)
    return {"live": live, "candidate": candidate, "reports": reports, "query_sets": query_sets_for(config),
            "k": config.k, "mode": config.mode}

@asset(kinds={"postgres"}, owners=OWNERS, check_specs=[AssetCheckSpec(
    GATE_CHECK, asset="live_index",
    description="The candidate is no worse than the live index on the labelled query sets (recall@20 and the "
                "other guarded metrics within tolerance) and passes the blocking quality checks.")])
def live_index(context: AssetExecutionContext, config: GateConfig, corpus: CorpusResource, database: DatabaseResource,
               index_evaluation: dict):
    """Which version users search: the candidate goes live only when the gate passes. Filled by `lectio migrate`
    (or the jobs migrate_index and gate_candidate, which index_after_batch asks for when a build held a rule
    or model change back); `lectio run` and build_index switch versions without it unless the chunking rules or
    the embedding model changed, so it stays "Never materialized" until the first migration and `lectio index
    list` is the record of what is live."""
    evaluation = index_evaluation
    candidate = evaluation.get("candidate")
    with database.connect() as conn:
        # Whatever the evaluation let through: the tolerances and retention are judged here too,
        # against the models the versions really hold.
        tolerances = tolerances_for(config, migration_gate.model_change(conn, candidate))
        keep = keep_for(config)
        if not candidate:
            live = versions.live_version(conn)
            result = migration_gate.GateResult(live or "none", live, "unchanged", f"no candidate; {live} stays live")
            result.retired = retention.retain(conn, keep)
        else:
            scoring = migration_gate.Scoring(migration_gate.load_query_sets(evaluation["query_sets"]),
                                             evaluation["k"], evaluation["mode"], evaluation["reports"])
            result = migration_gate.gate(conn, candidate, scoring, tolerances=tolerances, sources=corpus.sources())
            migration_gate.apply(conn, result, keep)
        live_now = versions.live_version(conn)
    comparison = migration_report.metrics_markdown(result)
    differences = migration_report.differences_markdown(result)
    yield Output(result.to_json(), metadata={
        "decision": result.decision,
        "reason": result.reason,
        "live": live_now or "none",
        "candidate": result.candidate,
        "comparison": MetadataValue.md(comparison),
        "differences": MetadataValue.md(differences),
        "queries_changed": len(result.differences),
        "retired": ", ".join(result.retired) or "none",
    })
    yield AssetCheckResult(
        check_name=GATE_CHECK,
        passed=result.passed,
        severity=AssetCheckSeverity.ERROR,
        description=result.reason,
        metadata={
            "candidate": result.candidate,
            "live": live_now or "none",
            "queries_changed": len(result.differences),
            "differences": MetadataValue.md(differences),
            "comparison": MetadataValue.md(comparison),
        },
    )


def _versions_markdown(listed, reports, live, candidate, set_names) -> str:
    """The overall scores per query set of the live version, the candidate and every version scored
    before, deltas against the live one in brackets; the ready versions never scored are named in
    one line after the tables (a row of dashes each buried the two that mattered)."""
    live_scores = _scores_of(next((v for v in listed if v.version == live), None), reports)
    ready = [v for v in listed if v.status == "ready"]
    shown = [v for v in ready if v.version in (live, candidate) or _scores_of(v, reports)]
    lines = []
    for name in set_names:
        lines += [f"**{name}**", "", "| version | role | rows | " + " | ".join(_SHORT[m] for m in METRICS) + " | n |",
                  "|---|---|---:|" + "---:|" * (len(METRICS) + 1)]
        for v in shown:
            scores = _scores_of(v, reports).get(name)
            role = "live" if v.version == live else "candidate" if v.version == candidate else "stored"
            cells = []
            for metric in METRICS:
                value = (scores or {}).get(metric)
                base = live_scores.get(name, {}).get(metric)
                if value is None:
                    cells.append("–")
                elif v.version != live and base is not None:
                    cells.append(f"{value:.3f} ({value - base:+.3f})")
                else:
                    cells.append(f"{value:.3f}")
            lines.append(f"| {v.version} | {role} | {v.rows or 0:,} | " + " | ".join(cells) +
                         f" | {(scores or {}).get('n', '–')} |")
        lines.append("")
    if unscored := [v.version for v in ready if v.version not in {s.version for s in shown}]:
        lines.append(f"Ready and never scored (a version is scored when a migration gates it): {', '.join(unscored)}.")
    return "\n".join(lines)


def _scores_of(version, reports) -> dict[str, dict]:
    """Overall scores per query set: fresh from this run, else as stored on the version."""
    if version is None:
        return {}
    if version.version in reports:
        return {name: report["overall"] for name, report in reports[version.version].items()}
    return (version.metrics or {}).get("evaluation", {}).get("query_sets", {})
