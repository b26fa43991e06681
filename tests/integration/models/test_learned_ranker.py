"""The learned ranker on a small real index: the fused ranking keeps what each retriever said,
training records the pages a search sees (as the caller searching: no private hit), trains and
stores trees under their fingerprint, and a search ordered by them returns the same hits in the
trees' order; a ranker trained on other features, or one that is not there, is refused by name."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lectio.evaluation.querysets import Query
from lectio.ranker import features, model
from lectio.retrieval.config import SearchConfig
from lectio.retrieval.filters import Filters
from lectio.retrieval import SearchRequest, search
from lectio.training.ranker import trainer

pytestmark = [pytest.mark.slow, pytest.mark.network]

SOURCES = """
sources:
  - {id: web, kind: scripture, format: sword-bible, module: engWEB2015eb, translation: WEB,
     select: "Psalm 23; Romans 8; John 3; Matthew 6", acl: [public]}
  - {id: mhcc, kind: commentary, format: sword-commentary, module: mhcc, select: "Psalm 23; Romans 8; John 3",
     title: Concise Commentary, author: Matthew Henry, acl: [public]}
  - {id: alice-notes, kind: notes, format: notes-jsonl, path: alice.jsonl, acl: ["user:alice"]}
"""
FILES = {"alice.jsonl": json.dumps({"id": "a1", "ref": "Psalm 23:1",
                                    "text": "Alice keeps a private shepherd note about wanting nothing."})}
QUERIES = [
    Query("Who is my shepherd?", "q1", relevant=("psa_23_1",)),
    Query("do not be anxious about tomorrow", "q2", relevant=("mat_6_34", "mat_6_25")),
    Query("God so loved the world", "q3", relevant=("jhn_3_16",)),
    Query("all things work together for good", "q4", relevant=("rom_8_28",)),
    Query("born again of water and spirit", "q5", relevant=("jhn_3_3", "jhn_3_5")),
    Query("nothing can separate us from the love of God", "q6", relevant=("rom_8_38", "rom_8_39")),
    Query("how should we pray?", "q7", relevant=("mat_6_9", "mat_6_6")),
    Query("treasure in heaven", "q8", relevant=("mat_6_20", "mat_6_19")),
]


@pytest.fixture(scope="module")
def version(index_of):
    return index_of(SOURCES, ["web", "mhcc", "alice-notes"], FILES)[0]


@pytest.fixture(scope="module")
def pages(version, database):
    with database.connect() as conn:
        return trainer.record(conn, {"readers": QUERIES}, depth=30, version=version)


def test_a_recorded_page_is_what_the_caller_may_read_with_a_row_of_features_per_hit(pages):
    assert len(pages) == len(QUERIES)
    for page in pages:
        assert page.rows.shape == (len(page.hits), len(features.NAMES)) and 0 < len(page.hits) <= 30
        assert all(hit.source_id != "alice-notes" for hit in page.hits)
    column = {name: i for i, name in enumerate(features.NAMES)}
    rows = np.vstack([page.rows for page in pages])
    # Fusion's lists reached the stage: every hit was proposed by some retriever, the vector's
    # cosine is read for each, and the first hit is first of the fused order.
    heard = [column[f"{name}_reciprocal_rank"] for name in features.LISTS]
    assert (rows[:, heard] > 0).any(axis=1).all()
    assert not np.isnan(rows[:, column["cosine"]]).any()
    assert all(page.rows[0, column["fused_position"]] == 0 for page in pages)
    # Labels come from the sets' verses, and at least one page holds a relevant hit to learn from.
    assert sum(page.labels.sum() for page in pages) >= len(QUERIES) // 2


def test_trained_trees_are_stored_by_fingerprint_and_order_a_search(pages, version, database, settings, monkeypatch):
    record = trainer.train(settings.home, pages, {"part": "dev"}, folds=2, rounds=5)
    again = trainer.train(settings.home, pages, {"part": "dev"}, folds=2, rounds=5)
    assert record["id"] == again["id"] and record["id"].startswith("trees-")  # seeded: the same trees
    judged = record["cross_validated"]
    assert judged["decision"] in ("switch", "refuse") and set(judged["metrics"]["readers"]) >= {"n", "recall@20", "mrr"}
    assert model.find(settings.home, "latest").name == record["id"]
    # Only the ranker moves hits, and the trees weigh a hundred times the fused order: the page is
    # the first ten of the trees' order of the fused head (the fusion of the two orders gives way to
    # the trees' at that weight wherever a rank among the first ten is at stake).
    monkeypatch.setitem(trainer.PARAMS, "min_data_in_leaf", 5)  # eight queries' hits: leaves of a hundred never split
    deep = trainer.train(settings.home, pages, {"part": "dev"}, folds=1, rounds=20)
    on = SearchConfig.from_options([f"stages.learned_rank.model={deep['id']}", "stages.learned_rank.depth=30",
                                    "stages.learned_rank.weight=100"],
                                   query_share_weight=0, collapse_covered=False, per_source=None,
                                   long_passage_tokens=0, pack_page=False)
    folder = model.find(settings.home, deep["id"])
    with database.connect() as conn:
        for principals in (("public",), ("user:alice",)):
            request = SearchRequest(QUERIES[0].query, k=10, version=version, config=on, principals=principals)
            with features.recording() as seen:
                results = search(conn, request).results
            rows, head = seen[-1]
            trees = model.scores(folder, rows)
            assert len(set(trees.round(9))) > 1  # the trees tell the hits apart
            expected = [head[i].chunk_id for i in np.argsort(-trees, kind="stable")][:10]
            assert [r.chunk_id for r in results] == expected
            assert ("alice-notes" in {hit.source_id for hit in head}) == (principals == ("user:alice",))


def test_a_ranker_on_other_features_or_none_by_that_name_is_refused(pages, version, database, settings):
    record = trainer.train(settings.home, pages, {"part": "dev"}, folds=1, rounds=3)
    folder = model.find(settings.home, record["id"])
    stored = json.loads((folder / model.RECORD).read_text())
    (folder / model.RECORD).write_text(json.dumps({**stored, "features": stored["features"][:-1]}))
    model.loaded.cache_clear()
    with database.connect() as conn:
        for name, said in ((record["id"], "other features"), ("trees-nothere", "no trained ranker"),
                           ("../../etc", "no trained ranker")):
            on = SearchConfig().with_settings({"stages.learned_rank.model": name})
            with pytest.raises(ValueError, match=said):
                search(conn, SearchRequest("the Lord is my shepherd", version=version, config=on))


def test_the_gate_lets_a_ranker_into_the_homes_searches_by_its_out_of_fold_verdict(pages, main_run, database, settings):
    from lectio.index import versions
    from lectio.training.ranker.gate import RANKER, gate_ranker
    from cli.model import describe_rankers, trained_rankers

    record = trainer.train(settings.home, pages, {"part": "dev"}, folds=2, rounds=5)
    query = "do not worry about anything but pray with thanksgiving"

    def chosen() -> dict:
        return versions.get_version(conn, None).rankers

    with database.connect() as conn:
        try:
            plain = search(conn, SearchRequest(query, k=5))
            verdict = gate_ranker(conn, settings.home, record["id"])
            assert verdict.decision == record["cross_validated"]["decision"]
            assert verdict.reason == record["cross_validated"]["reason"]
            if verdict.decision == "refuse":  # eight queries rarely show a gain beyond noise
                assert RANKER.setting not in chosen()
                assert [r.chunk_id for r in search(conn, SearchRequest(query, k=5)).results] == \
                    [r.chunk_id for r in plain.results]
                verdict = gate_ranker(conn, settings.home, record["id"], force=True)
            # The choice is the live version's record, with its verdict; no file of the home holds it.
            assert verdict.decision == "switch" and chosen() == {RANKER.setting: record["id"]}
            assert versions.get_version(conn, None).metrics[RANKER.verdict_key]["candidate"] == record["id"]
            assert not list(RANKER.registry.models_dir(settings.home).glob("*.json"))
            assert f"* {record['id']}:" in describe_rankers(trained_rankers(chosen()))  # what `lectio model show` lists
            # The default search now reads that ranker: the same page as naming it.
            by_default = search(conn, SearchRequest(query, k=5))
            named = search(conn, SearchRequest(query, k=5, config=SearchConfig().with_settings(
                {"stages.learned_rank.model": record["id"]})))
            assert [r.chunk_id for r in by_default.results] == [r.chunk_id for r in named.results]
            assert gate_ranker(conn, settings.home, None).decision == "switch"
            assert chosen() == {}
        finally:
            versions.choose_ranker(conn, versions.live_version(conn), RANKER.setting, None)


def test_a_version_is_searched_with_the_ranker_its_record_names(main_run, pages, database, settings, index_of,
                                                                monkeypatch):
    """A version built after the gate starts from the live version's choice, so the migration gate
    judges it as it would be searched; a version keeps its own choice, so a rollback searches as it
    did before."""
    from lectio.index import versions
    from lectio.training.ranker.gate import RANKER, gate_ranker

    # Built after the session's main run, which applies the session's sources file (no alice-notes
    # in it: the module's own version is revoked by it).
    version, _ = index_of(SOURCES, ["web", "mhcc"])
    monkeypatch.setitem(trainer.PARAMS, "min_data_in_leaf", 5)  # trees that move this small index's pages
    record = trainer.train(settings.home, pages, {"part": "dev"}, folds=1, rounds=20)
    query = QUERIES[1].query
    heavy = SearchConfig().with_settings({"stages.learned_rank.weight": 100})  # the trees' order decides
    plain = heavy.with_settings({RANKER.setting: ""})
    named = heavy.with_settings({RANKER.setting: record["id"]})

    def page(config: SearchConfig) -> list[str]:
        response = search(conn, SearchRequest(query, k=10, version=version, config=config))
        assert response.results, response.message
        return [r.chunk_id for r in response.results]

    with database.connect() as conn:
        live = versions.live_version(conn)
        try:
            gate_ranker(conn, settings.home, record["id"], force=True)
            later, _ = index_of(SOURCES, ["alice-notes"], {"alice.jsonl": json.dumps(
                {"id": "n1", "ref": "John 3:16", "text": "A note written after the ranker was let in."})})
            assert versions.get_version(conn, later).rankers == {RANKER.setting: record["id"]}
            # The version built before the gate has no ranker: its default search is its plain one.
            assert versions.get_version(conn, version).rankers == {}
            assert page(plain) != page(named)  # the trees move this page: which one a search read shows
            assert page(heavy) == page(plain)
            versions.choose_ranker(conn, version, RANKER.setting, record["id"])
            assert page(heavy) == page(named)
        finally:
            versions.choose_ranker(conn, live, RANKER.setting, None)
            versions.choose_ranker(conn, version, RANKER.setting, None)


def test_the_verdict_also_hears_the_sets_it_did_not_learn_from(pages, version, database, settings):
    from lectio.evaluation.metrics import evaluate_index

    unseen_set = [Query("I will lift up my eyes to the hills", "u1", relevant=("psa_23_1",)),
                  Query("the peace of God which surpasses all understanding", "u2", relevant=("rom_8_28",))]
    asked = []

    def unseen(model_id: str):
        asked.append(model_id)
        with database.connect() as conn:
            return tuple({"unseen": evaluate_index(conn, unseen_set, version=version, config=SearchConfig().with_settings(
                {"stages.learned_rank.model": model}))} for model in ("", model_id))

    record = trainer.train(settings.home, pages, {"part": "dev"}, folds=2, rounds=5, unseen=unseen)
    assert asked == [record["id"]]
    assert set(record["cross_validated"]["metrics"]) == {"readers", "unseen"}
    stored = json.loads((model.find(settings.home, record["id"]) / model.RECORD).read_text())
    assert stored["cross_validated"] == json.loads(json.dumps(record["cross_validated"]))
