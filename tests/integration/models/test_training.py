"""Learning from the corpus on a small real index: training pairs from its commentary and pericope
titles, the leakage guard on the real path, a real training of a few steps, and the trained
reranker as a stage of a real search."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lectio.evaluation.querysets import load_queries
from lectio.index import versions
from lectio.reranker.model import CrossEncoder, find
from lectio.retrieval.config import SearchConfig
from lectio.retrieval import SearchRequest, search
from lectio.training import pairs
from lectio.training.guard import QUERY_SETS, Guard
from lectio.training.reranker import trainer

pytestmark = [pytest.mark.slow, pytest.mark.network]

LONG_QUERY = load_queries(QUERY_SETS / "long_passages.jsonl")[0].query

SOURCES = """
sources:
  - {id: web, kind: scripture, format: sword-bible, module: engWEB2015eb, translation: WEB,
     select: "Psalm 23; Romans 8; Philippians 4; John 3", acl: [public]}
  - {id: mhcc, kind: commentary, format: sword-commentary, module: mhcc, select: "Psalm 23; Romans 8; John 3",
     title: Concise Commentary, author: Matthew Henry, acl: [public]}
  - {id: alice-commentary, kind: commentary, format: notes-jsonl, path: alice.jsonl, acl: ["user:alice"]}
  - {id: quoting, kind: commentary, format: notes-jsonl, path: quoting.jsonl, acl: [public]}
"""
FILES = {
    "alice.jsonl": json.dumps({"id": "a1", "ref": "Romans 8:28",
                               "text": "Alice privately thinks the calling here is a secret she keeps from everyone."}),
    "quoting.jsonl": json.dumps({"id": "q1", "ref": "John 3:16", "text": f"As one put it: {LONG_QUERY}"}),
}
# Psalm 23's pairs are the validation split here: a held-out book, as HELD_OUT is for the corpus.
HELD_OUT = frozenset({"ps"})
TINY = trainer.Recipe(layers=1, steps=8, groups_per_step=4, eval_every=4, validation_groups=8, learning_rate=1e-4)


@pytest.fixture(scope="module")
def corpus(index_of, database):
    version, embedder = index_of(SOURCES, ["web", "mhcc", "alice-commentary", "quoting"], FILES)
    with database.connect() as conn:
        chunks = versions.version_chunks(conn, version)
        made = pairs.from_version(conn, version, embedder.encode, Guard.of_query_sets(), held_out=HELD_OUT)
    return version, chunks, made


def test_pairs_come_from_the_commentary_and_the_titles_with_their_verses(corpus):
    _, chunks, made = corpus
    summary = pairs.summary(made)
    assert set(summary["by_origin"]) == {"commentary:mhcc", "title:web"}
    assert set(summary["by_split"]) == {"train", "validation"}
    assert all((p.split == "validation") == p.refs[0].startswith("ps_") for p in made)
    refs_of = {text: set(refs) for text, refs in zip(chunks["text"], chunks["refs"]) if refs is not None}
    for pair in made:
        assert refs_of[pair.positive] <= set(pair.refs)
        chapters = {r.rsplit("_", 1)[0] for r in pair.refs}
        for negative in pair.negatives:
            # A negative is about other chapters: never a passage that shares a verse with the query's.
            assert chapters.isdisjoint(r.rsplit("_", 1)[0] for r in refs_of[negative])
        assert not any(ch.isdigit() for ch in pair.query)  # no reference turns a pair into a look-up


def test_nothing_private_no_evaluation_query_and_no_entry_it_was_cut_from_enters(corpus):
    _, _, made = corpus
    texts = " ".join(text for p in made for text in (p.query, p.positive, *p.negatives))
    assert "Alice privately" not in texts
    assert LONG_QUERY[:60] not in texts
    assert not any(p.origin.endswith(("alice-commentary", "quoting")) for p in made)


def test_pairs_are_the_same_given_the_seed(corpus, index_of, database):
    version, _, made = corpus
    with database.connect() as conn:
        again = pairs.from_version(conn, version, _embedder_of(conn, version).encode, Guard.of_query_sets(),
                                            held_out=HELD_OUT)
        other = pairs.from_version(conn, version, _embedder_of(conn, version).encode, Guard.of_query_sets(),
                                            held_out=HELD_OUT, seed=7)
    assert pairs.fingerprint(again) == pairs.fingerprint(made)
    assert pairs.fingerprint(other) != pairs.fingerprint(made)


def _embedder_of(conn, version):
    from lectio.embedding.model import Embedder

    return Embedder.for_queries_of(versions.get_version(conn, version).model_id)


def test_a_few_steps_lower_the_loss_and_the_model_reloads_reranks_and_reproduces(corpus, settings, tmp_path: Path):
    version, _, made = corpus
    train_split = [p for p in made if p.split == "train"]
    model, tokenizer = trainer.untrained(TINY)
    before = trainer.validate(model, tokenizer, train_split, TINY.max_tokens, "fp32")
    record = trainer.train(made, settings.home, TINY)
    assert record["train_pairs"] == len(train_split) and record["validation"]
    assert len(record["loss_curve"]) >= 1 and record["id"].startswith("rerank-minilm-l1-")

    folder = find(settings.home, record["id"])
    loaded = CrossEncoder.load(folder)
    after = trainer.validate(loaded.model, loaded.tokenizer, train_split, TINY.max_tokens, "fp32")
    assert after["loss"] < before["loss"]

    # The same pairs, recipe and seed in another home: the same id and the same scores.
    twin = trainer.train(made, tmp_path, TINY)
    assert twin["id"] == record["id"]
    pair = train_split[0]
    texts = [pair.positive, *pair.negatives]
    twin_scores = CrossEncoder.load(find(tmp_path, twin["id"])).score(pair.query, texts, 128)
    assert np.allclose(loaded.score(pair.query, texts, 128), twin_scores, atol=1e-4)
    # Trained again where it is: found by its id, not trained twice.
    assert trainer.train(made, settings.home, TINY).get("reused")

    # As a stage of a real hybrid search: the same hits, in the order the reranker's fusion gives.
    with_reranker = SearchConfig.from_options([f"stages.rerank.model={record['id']}"])
    plain = SearchConfig.from_options([f"stages.rerank.model={record['id']}"], mode="lexical")
    with psycopg_conn(settings) as conn:
        query = "all things work together for good for those who love God"
        ranked = search(conn, SearchRequest(query, k=5, version=version, config=with_reranker))
        assert ranked.results and ranked.mode == "hybrid"
        lexical = search(conn, SearchRequest(query, k=5, version=version, config=plain))
        same = search(conn, SearchRequest(query, k=5, version=version, config=replace(plain, stages=SearchConfig().stages)))
        assert [r.chunk_id for r in lexical.results] == [r.chunk_id for r in same.results]
        # A reference is looked up, never reranked.
        looked_up = search(conn, SearchRequest("Romans 8:28", version=version, config=with_reranker))
        assert looked_up.mode == "reference" and looked_up.results[0].refs == ["rom_8_28"]


def psycopg_conn(settings):
    from lectio.index.database import ensure_database

    return ensure_database(settings).connect()


def test_training_pairs_then_reranker_and_adapted_embedder_in_dagster_on_the_live_index(main_run, settings, tmp_path):
    from dagster import AssetKey, FilesystemIOManager, materialize

    from pipelines.definitions import build_definitions

    defs = build_definitions(settings.sources_file)
    graph = defs.resolve_asset_graph()
    assert graph.get(AssetKey("reranker")).parent_keys == {AssetKey("training_pairs")}
    assert graph.get(AssetKey("adapted_embedder")).parent_keys == {AssetKey("training_pairs")}
    assert graph.get(AssetKey("training_pairs")).parent_keys == {AssetKey("search_index")}
    names = ["training_pairs", "reranker", "adapted_embedder"]
    chosen = [a for a in defs.assets if a.key.path[0] in names]
    resources = dict(defs.resources) | {"io_manager": FilesystemIOManager(base_dir=str(tmp_path))}
    run_config = {"ops": {"reranker": {"config": {"steps": 2, "layers": 1, "gate": False}},
                          "adapted_embedder": {"config": {"steps": 2}}}}
    result = materialize(chosen, resources=resources, run_config=run_config, selection=names)
    assert result.success
    adapted = result.asset_materializations_for_node("adapted_embedder")[0].metadata
    assert adapted["model"].value.startswith("all-MiniLM-L6-v2-adapted-") and adapted["seconds"].value > 0
    assert "validation mrr untrained" in adapted and "data:image/png;base64," in adapted["loss curve"].value
    made = result.asset_materializations_for_node("training_pairs")[0].metadata
    assert made["pairs"].value > 0 and "commentary:mhcc" in made["by origin"].value
    with psycopg_conn(settings) as conn:
        assert made["mined from"].value == versions.live_version(conn)
    trained = result.asset_materializations_for_node("reranker")[0].metadata
    assert trained["model"].value.startswith("rerank-minilm-l1-") and "data:image/png;base64," in trained["loss curve"].value
    # Again with nothing changed: the pairs are read back and the model found, not trained again.
    again = materialize(chosen, resources=resources, run_config=run_config, selection=names)
    assert again.asset_materializations_for_node("training_pairs")[0].metadata["made now"].value is False
    assert again.asset_materializations_for_node("reranker")[0].metadata["reused"].value is True
    assert again.asset_materializations_for_node("adapted_embedder")[0].metadata["reused"].value is True


def test_the_reranker_asset_gates_as_lectio_model_train_does(main_run, settings, tmp_path, monkeypatch):
    """Materialised in the UI, a reranker ends as `lectio model train` leaves it: gated, and the live
    version's searches read it only where the gate let it in (here on the fixture set alone, which
    the gate's dev part of every project set would take minutes to score on)."""
    from dagster import FilesystemIOManager, materialize

    from lectio.training import workflow
    from lectio.training.reranker.gate import RERANKER
    from pipelines.definitions import build_definitions

    sets = tmp_path / "sets"
    sets.mkdir()
    (sets / "migration.jsonl").write_text(
        (Path(__file__).parents[2] / "fixtures" / "queries" / "migration.jsonl").read_text())
    monkeypatch.setattr(workflow, "GATE_QUERY_SETS", sets)
    defs = build_definitions(settings.sources_file)
    names = ["training_pairs", "reranker"]
    chosen = [a for a in defs.assets if a.key.path[0] in names]
    resources = dict(defs.resources) | {"io_manager": FilesystemIOManager(base_dir=str(tmp_path / "io"))}
    with psycopg_conn(settings) as conn:
        try:
            result = materialize(chosen, resources=resources, selection=names,
                                 run_config={"ops": {"reranker": {"config": {"steps": 2, "layers": 1}}}})
            assert result.success
            made = result.asset_materializations_for_node("reranker")[0].metadata
            decision = made["gate"].value.split(":")[0]
            assert decision in ("switch", "refuse")
            chosen_now = versions.get_version(conn, None).rankers.get(RERANKER.setting)
            assert chosen_now == (made["model"].value if decision == "switch" else None)
            assert made["searched with"].value == (chosen_now or "none")
            assert versions.get_version(conn, None).metrics[RERANKER.verdict_key]["candidate"] == made["model"].value
        finally:
            versions.choose_ranker(conn, versions.live_version(conn), RERANKER.setting, None)


def test_the_gate_turns_a_reranker_on_for_the_homes_searches_and_off_again(main_run, settings, corpus):
    from lectio.evaluation.querysets import load_queries
    from lectio.training.reranker.gate import RERANKER, gate

    _, _, made = corpus
    record = trainer.train(made, settings.home, TINY)
    sets = {"migration": load_queries(Path(__file__).parents[2] / "fixtures" / "queries" / "migration.jsonl")}
    lenient = {"recall@20": 1.0}
    query = "do not worry about anything but pray with thanksgiving"

    def active():
        return versions.get_version(conn, None).rankers.get(RERANKER.setting)

    with psycopg_conn(settings) as conn:
        try:
            assert active() is None
            # A tiny model on a tiny set cannot show a gain beyond noise: the rule is asked for
            # below, once the switch itself is seen.
            on = gate(conn, settings.home, record["id"], sets, tolerances=lenient, require_gain=False)
            assert on.decision == "switch" and active() == record["id"]
            assert set(on.metrics["migration"]) >= {"recall@20", "mrr"}
            assert "reranker_gate" in versions.get_version(conn, None).metrics
            # The default search now reads that reranker: the same page as naming it.
            by_default = search(conn, SearchRequest(query, k=5))
            named = search(conn, SearchRequest(query, k=5, config=SearchConfig.from_options(
                [f"stages.rerank.model={record['id']}"])))
            assert [r.chunk_id for r in by_default.results] == [r.chunk_id for r in named.results]
            assert gate(conn, settings.home, record["id"], sets).decision == "unchanged"
            off = gate(conn, settings.home, None, sets, tolerances=lenient)
            assert off.decision == "switch" and active() is None
            # Turning one on asks for a gain beyond noise; without one it is refused and stays off.
            refused = gate(conn, settings.home, record["id"], sets, tolerances=lenient)
            interval = refused.metrics["migration"]["recall@20"]["ci95"]
            if not interval or interval[0] <= 0:
                assert refused.decision == "refuse" and "gained beyond noise" in refused.reason
                assert active() is None
        finally:
            versions.choose_ranker(conn, versions.live_version(conn), RERANKER.setting, None)


def test_lectio_model_train_from_the_cli_and_what_show_lists(main_run, capsys):
    from cli import main as cli
    from cli.model import describe_rerankers, trained_rerankers

    capsys.readouterr()
    assert cli(["model", "train", "--steps", "2", "--layers", "1", "--no-gate", "--json"]) == 0
    trained = json.loads(capsys.readouterr().out)
    assert trained["id"].startswith("rerank-minilm-l1-") and trained["pairs_summary"]["pairs"] > 0
    # What `lectio model show` adds to the runtime's evidence (show itself would measure the
    # runtime in this shared home, which other tests read as unmeasured).
    listed = trained_rerankers()
    assert trained["id"] in [r["id"] for r in listed] and trained["id"] in describe_rerankers(listed)
    assert cli(["model", "train", "--steps", "0"]) == 2  # one line, as every bad argument
    assert "--steps must be at least 1" in capsys.readouterr().err
