"""A run's config may only narrow the migration gate (issue 63, item 1).

`migrate_index` and `gate_candidate` took `tolerances: {}` (nothing guarded) or 1e9 per metric,
`keep: 0` (every version pruned but live and the rollback target), query sets naming any file on
the host and any version as the candidate; with the `lectio/embed_model` tag a launch switched a
model in under the looser tolerances of a rule change. Each such launch is now refused at its
first step, before anything is built or scored, in one line naming the setting; a launch that
tightens the gate runs. The operator's `lectio migrate` flags are the deployment's and still apply.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from dagster import DagsterInstance

from assets.names import GATE_JOB, MIGRATE_JOB, MODEL_TAG
from lectio.evaluation import migration_gate
from lectio.index import versions
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env

pytestmark = [pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROJECT = Path(__file__).resolve().parents[3]
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
THEOLOGY = PROJECT / "data" / "queries" / "theology.jsonl"

# Each way a launch once loosened the gate: (op, config, the setting the refusal names).
LOOSENINGS = {
    "nothing guarded": ("live_index", {"tolerances": {}}, "tolerances"),
    "huge tolerances": ("live_index", {"tolerances": {"recall@20": 1e9, "budget_recall@1000": 1e9}}, "tolerances"),
    "one metric dropped": ("live_index", {"tolerances": {"recall@20": 0.0}}, "tolerances"),
    "a NaN tolerance": ("live_index", {"tolerances": {"recall@20": math.nan, "budget_recall@1000": 0.0}}, "tolerances"),
    "keep 0": ("live_index", {"keep": 0}, "keep"),
    "a file of the host": ("index_evaluation", {"query_sets": ["/etc/passwd"]}, "query_sets"),
    "out through ..": ("index_evaluation", {"query_sets": [f"{PROJECT}/data/queries/../../tests/fixtures/queries/"
                                                           "migration.jsonl"]}, "query_sets"),
    "a default set dropped": ("index_evaluation", {"query_sets": [f"{THEOLOGY}:dev"]}, "query_sets"),
    "the test part for the dev part": ("index_evaluation", {"query_sets": [
        f"{THEOLOGY}:test", *migration_gate.DEFAULT_QUERY_SETS[1:]]}, "query_sets"),
    "lexical scoring": ("index_evaluation", {"mode": "lexical"}, "k, mode"),
    "another candidate": ("index_evaluation", {"candidate": "v1"}, "candidate"),
}


@pytest.fixture(scope="module")
def home(documents_home_factory):
    with documents_home_factory("lectio-gate-authority-home-") as home:
        from pipelines.runners import run_main

        assert run_main(home.settings, echo=lambda _: None).index["live"]
        # A second version, so an older one (v1) is retained beside the live one.
        (home.folder / "rota.txt").write_text("Volunteer rota\n\nSunday: the rota is on the board.\n")
        assert run_main(home.settings, echo=lambda _: None).index["version"] == "v2"
        prepare_dagster_env(home.settings, home.database)
        yield home


def _versions(home) -> list[tuple]:
    with home.connect() as conn:
        return [(v.version, v.status, v.metrics) for v in versions.list_versions(conn)]


def _launch(home, job: str, ops: dict, tags: dict | None = None):
    defs = build_definitions(home.settings.sources_file)
    return defs.resolve_job_def(job).execute_in_process(
        instance=DagsterInstance.get(), run_config={**QUIET, "ops": ops}, tags=tags or {}, raise_on_error=False)


def _refusal(result) -> tuple[str, str]:
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    return failure.step_key, failure.step_failure_data.error.message.strip()


@pytest.mark.parametrize("job, first_step", [(MIGRATE_JOB, "search_index"), (GATE_JOB, "index_evaluation")])
@pytest.mark.parametrize("loosening", sorted(LOOSENINGS))
def test_a_launch_that_loosens_the_gate_is_refused_before_anything_is_built(home, job, first_step, loosening):
    op, config, setting = LOOSENINGS[loosening]
    before = _versions(home)
    result = _launch(home, job, {op: {"config": config}})
    assert not result.success
    step, message = _refusal(result)
    assert step == first_step and len(message.splitlines()) == 1, message
    assert f"refused: run config ops.{op}.config.{setting}: " in message, message
    # Nothing was built, scored or pruned.
    assert not result.asset_materializations_for_node(first_step)
    assert _versions(home) == before


def test_a_model_tag_is_held_to_the_model_tolerances(home):
    """Tagged with a model, the rule change's tolerances are looser than a model change may have."""
    before = _versions(home)
    result = _launch(home, MIGRATE_JOB, {"live_index": {"config": {"tolerances": dict(migration_gate.DEFAULT_TOLERANCES)}}},
                     tags={MODEL_TAG: "base"})
    step, message = _refusal(result)
    assert step == "search_index" and "ops.live_index.config.tolerances" in message and "mrr, ndcg@10 no longer guarded" in message
    assert _versions(home) == before


@pytest.fixture()
def small_project_sets(monkeypatch):
    """The project's sets, for this test, are the fixture's one set: scoring the defaults' thousand
    queries twice would take minutes; what is allowed is the same rule."""
    monkeypatch.setattr(migration_gate, "QUERY_SETS_DIR", FIXTURES / "queries")
    monkeypatch.setattr(migration_gate, "DEFAULT_QUERY_SETS", (str(FIXTURES / "queries" / "migration.jsonl"),))


def _new_rota(home, words: str) -> None:
    """The rota's new text ingested, so the next build makes a new version: a real candidate."""
    from assets.names import INGEST_JOB

    (home.folder / "rota.txt").write_text(f"Volunteer rota\n\n{words}\n")
    defs = build_definitions(home.settings.sources_file)
    assert defs.resolve_job_def(INGEST_JOB).execute_in_process(
        instance=DagsterInstance.get(), partition_key="rota", run_config=QUIET).success


def test_a_launch_that_tightens_the_gate_runs(home, small_project_sets):
    with home.connect() as conn:
        live = versions.live_version(conn)
    _new_rota(home, "Monday: the hall is closed.")
    tighter = {"recall@20": 0.01, "budget_recall@1000": 0.0, "mrr": 0.02}
    result = _launch(home, MIGRATE_JOB, {"live_index": {"config": {"tolerances": tighter, "keep": 5}},
                                         "index_evaluation": {"config": {"query_sets": []}}})
    assert result.success
    gate = result.output_for_node("live_index")
    assert gate["candidate"] != live and gate["tolerances"] == tighter and gate["decision"] in ("switch", "refuse"), gate
    with home.connect() as conn:
        assert versions.live_version(conn) in (live, gate["candidate"])


def test_the_operators_migrate_flags_still_apply(home, small_project_sets, capsys):
    """`lectio migrate` is the operator on their own machine: its flags may loosen the gate."""
    import json

    from cli import main as cli

    (home.folder / "rota.txt").write_text("Volunteer rota\n\nTuesday: choir practice.\n")
    capsys.readouterr()
    code = cli(["migrate", "--json", "--queries", str(FIXTURES / "queries" / "migration.jsonl"),
                "--tolerance", "1", "--tolerance-for", "budget_recall@1000=off", "--keep", "0"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["ok"], out
    assert out["gate"]["tolerances"] == {"recall@20": 1.0} and out["gate"]["decision"] == "switch", out["gate"]
