"""The ONNX Runtime backend end to end: exported from the packaged weights into an empty home,
the same vectors as torch, and a backend change re-embeds (the cache key), moves every source's
fingerprint and builds a version that records its backend and is searched with it."""

from __future__ import annotations

import hashlib
import os
import json
from dataclasses import replace

import numpy as np
import pytest

from lectio.embedding import backends, measurement, model, numerics, onnx_runtime, runtime_choice, runtime_record
from lectio.embedding.cache import embed_chunks
from lectio.embedding.model import Embedder, ModelChoice, model_path, torch_vectors
from lectio.index import versions
from lectio.index.build import build_index
from lectio.retrieval import SearchConfig, SearchRequest, search
from lectio.rulesets.chunk import chunks_frame
from lectio.rulesets.registry import input_fingerprints, run_source

pytestmark = [pytest.mark.slow, pytest.mark.network]

SOURCES = """
sources:
  - {id: web, kind: scripture, format: sword-bible, module: engWEB2015eb, translation: WEB,
     select: "Psalm 23; Psalm 121", acl: [public]}
"""
TEXTS = ["Jesus wept.", "The Lord is my shepherd; I shall lack nothing. " * 3,
         "Therefore, being justified by faith, we have peace with God through our Lord Jesus Christ. " * 8, ""]


def _clear():
    for cached in (numerics.requested, runtime_choice._choose, model._configured, model._query_choice):
        cached.cache_clear()


def test_the_export_is_made_from_the_packaged_weights_into_an_empty_home(tmp_path):
    home = tmp_path / "home"  # not even created yet
    choice = ModelChoice(backend="onnx")
    path = onnx_runtime.ensure_export(choice.name, choice.release, "fp32", home)
    assert path == home / "models" / f"{choice.name}@{choice.release}" / "model.onnx" and path.is_file()
    record = json.loads((path.parent / "export.json").read_text())
    assert record["from"] == str(model_path()) and record["graph"] in ("fused", "plain")
    kept = record["checks"]["fused.onnx" if record["graph"] == "fused" else "plain.onnx"]
    assert kept["equivalent"] and kept["min_cosine"] >= onnx_runtime.MIN_COSINE
    # Nothing was written into the package, and no scratch files stay in the home.
    assert not (model_path() / "onnx").exists()
    kept_files = sorted(p.name for p in path.parent.iterdir() if not p.name.startswith(".lock"))
    assert kept_files == ["export.json", "model.onnx", "model.onnx.sha256"]
    # The SHA-256 of the file kept is recorded beside it (as sha256sum writes it) and in the record.
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert (path.parent / "model.onnx.sha256").read_text() == f"{digest}  model.onnx\n" == f"{record['sha256']}  model.onnx\n"
    # The same vectors as torch's, whatever the batch: one text alone (the query session) and all.
    onnx = onnx_runtime.OnnxModel(path)
    reference = torch_vectors(choice.name, TEXTS)
    for vectors in (onnx.encode(TEXTS), np.vstack([onnx.encode([t]) for t in TEXTS])):
        assert np.abs(vectors - reference).max() < 1e-5
        assert np.min(np.sum(vectors * reference, axis=1)) > 0.99999
    # Made once: a second call finds it.
    stamp = path.stat().st_mtime_ns
    assert onnx_runtime.ensure_export(choice.name, choice.release, "fp32", home).stat().st_mtime_ns == stamp
    # The home's measurement of the backends, recorded beside the export.
    measured = runtime_choice.measured(choice.name, choice.release, [("onnx", "fp32"), ("torch", "fp32")], home, sample=32)
    assert measured["backend"] in backends.BACKENDS and measured["machine"] == runtime_record.machine()
    assert measured["candidates"]["onnx/fp32"]["equivalence"]["relation"] == "interchangeable"
    assert measured["query"] is not None and (path.parent / runtime_record.CHOICE_FILE).is_file()
    if measured["query"]["backend"] == "onnx":  # and how many threads its query session runs
        assert measured["query"]["threads"] in (1, onnx_runtime.cores())
        assert runtime_choice.query_session(choice.name, choice.release, home) == (measured["query"]["threads"],
                                                                             measured["query"]["spin"])


def test_the_query_session_runs_the_threads_this_home_measured_and_they_change_no_vector(monkeypatch, tmp_path):
    home = tmp_path / "home"
    choice = ModelChoice(backend="onnx")
    path = onnx_runtime.ensure_export(choice.name, choice.release, "fp32", home)
    many = onnx_runtime.cores()
    one = onnx_runtime.OnnxModel(path)
    for query in ((many, False), (many, True)):
        every_core = onnx_runtime.OnnxModel(path, query=query)
        options = every_core.session("query").get_session_options()
        assert options.intra_op_num_threads == many
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == str(int(query[1]))
        for text in TEXTS + measurement.queries(16):
            assert np.array_equal(one.encode([text]), every_core.encode([text]))
    found = measurement.query_threads_measured(path, choice.name, measurement.queries(8), rounds=1)
    assert found["threads"] in (1, many) and (many == 1 or set(found["alone"]) == {"1", str(many), f"{many}+spin"})
    # A home that recorded every core for its queries: its query embedder's session runs them.
    record = {"backend": "onnx", "precision": "fp32", "machine": runtime_record.machine(),
              "query": {"backend": "onnx", "precision": "fp32", "threads": many, "spin": True}}
    (path.parent / runtime_record.CHOICE_FILE).write_text(json.dumps(record))
    monkeypatch.setenv("LECTIO_HOME", str(home))
    embedder = Embedder(choice=choice)
    embedder.encode(["grace"])
    assert embedder._onnx.session("query").get_session_options().intra_op_num_threads == many


def test_the_onnx_embedder_keeps_the_embedder_contract(monkeypatch, tmp_path):
    monkeypatch.setenv("LECTIO_HOME", str(tmp_path / "home"))
    onnx, torch_ = Embedder(choice=ModelChoice(backend="onnx")), Embedder(choice=ModelChoice())
    head = "The Lord is my shepherd; I shall lack nothing. " * 40  # past the window: embedded in windows
    texts = ["Jesus wept.", head, head + "Ships and sailors crossed the stormy sea. " * 40]
    vectors, reference = onnx.encode(texts), torch_.encode(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.min(np.sum(vectors * reference, axis=1)) > 0.99999
    assert onnx.encode([]).shape == (0, 384)


def test_a_backend_change_re_embeds_and_builds_a_version_that_records_it(conn, settings, tmp_path):
    sources = tmp_path / "sources.yaml"
    sources.write_text(SOURCES)
    frame = chunks_frame(run_source(sources, "web", settings.corpus_dir)[1])
    on_torch, on_onnx = Embedder(choice=ModelChoice()), Embedder(choice=ModelChoice(backend="onnx"))
    hashes = frame["content_hash"].unique().tolist()
    conn.execute("DELETE FROM embedding_cache WHERE content_hash = ANY(%s) AND model_id = ANY(%s)",
                 (hashes, [on_torch.model_id, on_onnx.model_id]))
    assert embed_chunks(conn, frame, on_torch).embedded == len(hashes)
    # torch's vectors are not ONNX Runtime's: the other key embeds everything again, once.
    first = embed_chunks(conn, frame, on_onnx)
    assert first.embedded == len(hashes) and first.reused == 0
    assert embed_chunks(conn, frame, on_onnx).reused == len(hashes)
    pairs = conn.execute(
        "SELECT 1 - (a.embedding <=> b.embedding) FROM embedding_cache a JOIN embedding_cache b "
        "ON a.content_hash = b.content_hash WHERE a.model_id = %s AND b.model_id = %s AND a.content_hash = ANY(%s)",
        (on_torch.model_id, on_onnx.model_id, hashes)).fetchall()
    assert len(pairs) == len(hashes) and min(p[0] for p in pairs) > 0.99999
    # Another fingerprint, and the version records the backend's model id.
    assert versions.fingerprint(frame, on_torch.model_id) != versions.fingerprint(frame, on_onnx.model_id)
    version = build_index(conn, frame, on_onnx.model_id, [], switch_live=False).version
    assert versions.get_version(conn, version).model_id == on_onnx.model_id
    # Searched with the version's own backend, whatever this process embeds with.
    vector = SearchConfig.from_options(mode="vector")
    query = "I lift up my eyes to the hills"
    as_torch = search(conn, SearchRequest(query, version=version, config=vector), embedder=on_torch).results
    as_onnx = search(conn, SearchRequest(query, version=version, config=vector), embedder=on_onnx).results
    assert as_torch and [(r.chunk_id, r.score) for r in as_torch] == [(r.chunk_id, r.score) for r in as_onnx]


def test_every_source_fingerprint_moves_with_the_backend(monkeypatch, settings):
    fingerprints = {}
    try:
        for backend in backends.BACKENDS:
            _clear()
            monkeypatch.setenv("LECTIO_EMBED_BACKEND", backend)
            assert model.configured_model().backend == backend
            fingerprints[backend] = input_fingerprints(settings.sources_file, settings.corpus_dir)
    finally:
        _clear()
    torch_prints, onnx_prints = fingerprints["torch"], fingerprints["onnx"]
    assert torch_prints.keys() == onnx_prints.keys() and torch_prints
    assert all(torch_prints[s] != onnx_prints[s] for s in torch_prints if torch_prints[s] is not None)


@pytest.mark.parametrize("precision", ["int8"])
def test_int8_is_opt_in_and_keyed_apart(tmp_path, precision):
    choice = ModelChoice(precision=precision, backend="onnx")
    path = onnx_runtime.ensure_export(choice.name, choice.release, precision, tmp_path / "home")
    assert path.name == onnx_runtime.INT8_FILE and (path.parent / onnx_runtime.FP32_FILE).is_file()
    assert onnx_runtime.recorded_digest(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    vectors = onnx_runtime.OnnxModel(path).encode(TEXTS)
    cosine = np.sum(vectors * torch_vectors(choice.name, TEXTS), axis=1)
    # Close, but not fp32's vectors: a key of its own, and never chosen unless asked for.
    assert cosine.min() > 0.9 and choice.id.endswith("+int8+onnx") and choice.id != replace(choice, precision="fp32").id


def test_a_query_served_by_onnx_imports_neither_torch_nor_sentence_transformers(settings):
    """The CLI's search path with the ONNX backend: importing the search and embedding a query
    must not pay for torch (once ~1 s through spaCy's package, ~4 s through the torch backend)."""
    import os
    import subprocess
    import sys

    choice = ModelChoice(backend="onnx")
    onnx_runtime.ensure_export(choice.name, choice.release, "fp32", settings.home)  # made beforehand
    probe = ("import sys, cli, lectio.retrieval.door\n"
             "from lectio.embedding.model import Embedder, ModelChoice\n"
             "vector = Embedder(choice=ModelChoice(backend='onnx')).encode(['peace that passes understanding'])\n"
             "assert vector.shape == (1, 384)\n"
             "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n")
    env = {**os.environ, "LECTIO_HOME": str(settings.home), "LECTIO_EMBED_BACKEND": "onnx"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_queries_of_a_torch_built_version_run_on_the_runtime_recorded_fastest(tmp_path):
    """Where this home measured ONNX fp32 interchangeable with torch fp32, a query of a version
    torch built is embedded on whichever the measurement found quicker for one query, in a fresh
    process that imports torch only if that is torch; with no measurement, on the version's own."""
    import subprocess
    import sys

    home = tmp_path / "home"
    torch_built = ModelChoice()
    record = runtime_choice.measured(torch_built.name, torch_built.release, [("onnx", "fp32"), ("torch", "fp32")], home,
                               sample=32)
    probe = ("import sys; from lectio.embedding.model import Embedder; "
             f"e = Embedder.for_queries_of({torch_built.id!r}); e.encode(['grace']); "
             "print(e.choice.backend, 'torch' in sys.modules)")
    for where, expected in ((home, record["query"]["backend"]), (tmp_path / "unmeasured", "torch")):
        env = {**os.environ, "LECTIO_HOME": str(where)}
        env.pop("LECTIO_EMBED_BACKEND", None)
        out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
        backend, imported = out.stdout.split()
        assert backend == expected and imported == str(expected == "torch"), out.stdout
