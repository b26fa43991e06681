"""The exported ONNX model is checked before every use: a model.onnx that is not the file exported
(a weight perturbed, bytes flipped, or no SHA-256 recorded) is exported again, or refused where it
cannot be, and the embedding cache never keeps a vector that such a file made."""

from __future__ import annotations

import hashlib
import logging
import shutil
import uuid

import numpy as np
import pandas as pd
import pytest

from lectio.embedding import onnx_runtime
from lectio.embedding.cache import embed_chunks
from lectio.embedding.model import Embedder, ModelChoice, model_path, torch_vectors

pytestmark = [pytest.mark.slow]

CHOICE = ModelChoice(backend="onnx")
TEXTS = ["Jesus wept.", "The Lord is my shepherd; I shall lack nothing.",
         "Therefore, being justified by faith, we have peace with God through our Lord Jesus Christ."]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """One export, copied into each test's home (an export takes a while)."""
    return onnx_runtime.ensure_export(CHOICE.name, CHOICE.release, "fp32", tmp_path_factory.mktemp("pristine")).parent


@pytest.fixture()
def home(exported, tmp_path, monkeypatch):
    """A home holding the export as it was made, its SHA-256 record included."""
    home = tmp_path / "home"
    shutil.copytree(exported, onnx_runtime.model_dir(CHOICE.name, CHOICE.release, home))
    monkeypatch.setenv("LECTIO_HOME", str(home))
    return home


@pytest.fixture()
def texts(conn):
    """Texts under hashes no other test caches; whatever the cache got is removed afterwards."""
    hashes = [f"model-check-{uuid.uuid4().hex}" for _ in TEXTS]
    yield pd.DataFrame({"content_hash": hashes, "text": TEXTS})
    conn.execute("DELETE FROM embedding_cache WHERE content_hash = ANY(%s)", (hashes,))


def model_file(home):
    return onnx_runtime.model_dir(CHOICE.name, CHOICE.release, home) / "model.onnx"


def perturb_weight(path):
    """Scale one attention weight: the file still loads, and serves wrong vectors."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path))
    weight = next(t for t in graph.graph.initializer if t.name.startswith("onnx::MatMul"))
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * 3.0, weight.name))
    onnx.save(graph, str(path))


def flip_bytes(path):
    """Flip the sign bit of every word embedding, in place: same size, still loads."""
    import onnx

    table = max(onnx.load(str(path)).graph.initializer, key=lambda t: len(t.raw_data)).raw_data
    data = bytearray(path.read_bytes())
    start = data.find(table)
    data[start + 3:start + len(table):4] = bytes(b ^ 0x80 for b in data[start + 3:start + len(table):4])
    path.write_bytes(bytes(data))


def far_from_torch(path) -> bool:
    """What the file itself embeds (ONNX Runtime alone, unchecked) is not the model's vectors."""
    import onnxruntime
    from tokenizers import Tokenizer

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(model_path() / "tokenizer.json"))
    tokenizer.no_padding()
    vectors = []
    for text in TEXTS:
        ids = np.asarray([tokenizer.encode(text).ids], dtype=np.int64)
        inputs = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        vectors.append(session.run(["sentence_embedding"], inputs)[0][0])
    return float(np.min(np.sum(np.asarray(vectors) * torch_vectors(CHOICE.name, TEXTS), axis=1))) < 0.99


def cached(conn, frame, model_id) -> dict[str, np.ndarray]:
    rows = conn.execute("SELECT content_hash, embedding FROM embedding_cache WHERE model_id = %s "
                        "AND content_hash = ANY(%s)", (model_id, frame["content_hash"].tolist())).fetchall()
    return {h: np.asarray(v.to_numpy(), dtype=np.float32) for h, v in rows}


def block_exports(home):
    """The home cannot take the export lock (its lock file is a folder), so nothing can be
    exported there again: what a read-only or full disk does, and it holds for root too."""
    folder = onnx_runtime.model_dir(CHOICE.name, CHOICE.release, home)
    (folder / ".lock").unlink(missing_ok=True)
    (folder / ".lock").mkdir()
    return folder


def test_a_perturbed_model_is_exported_again_and_the_cache_keeps_only_the_models_vectors(home, texts, conn, caplog):
    path = model_file(home)
    perturb_weight(path)
    tampered = path.read_bytes()
    assert far_from_torch(path)  # what a load of the file unchecked serves
    embedder = Embedder(choice=CHOICE)
    with caplog.at_level(logging.WARNING, logger="lectio.embedding.onnx_runtime"):
        stats = embed_chunks(conn, texts, embedder)
    assert stats.embedded == len(TEXTS)
    # Every vector the cache holds is the model's (torch's within the export's tolerance).
    vectors = cached(conn, texts, embedder.model_id)
    assert sorted(vectors) == sorted(texts["content_hash"])
    reference = dict(zip(texts["content_hash"], torch_vectors(CHOICE.name, TEXTS)))
    assert min(float(vectors[h] @ reference[h]) for h in vectors) > 0.99999
    # Said once, in one line naming the file and why.
    said = [r.getMessage() for r in caplog.records if r.name == "lectio.embedding.onnx_runtime"]
    assert said == [f"the ONNX model file {path} does not match the SHA-256 recorded at its export "
                    "(model.onnx.sha256); exporting it again"]
    # Exported again: the file is the one its record names, and no longer the perturbed one.
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert path.read_bytes() != tampered
    assert path.with_name("model.onnx.sha256").read_text() == f"{digest}  model.onnx\n"


def test_flipped_bytes_that_cannot_be_exported_again_are_refused_and_nothing_is_cached(home, texts, conn):
    path = model_file(home)
    flip_bytes(path)
    assert far_from_torch(path)
    folder = block_exports(home)
    embedder = Embedder(choice=CHOICE)
    with pytest.raises(onnx_runtime.BackendUnavailable) as refused:
        embed_chunks(conn, texts, embedder)
    assert str(refused.value) == (f"the onnx embedding backend refuses {path}: it does not match the SHA-256 "
                                  "recorded at its export (model.onnx.sha256), and making it again failed: cannot "
                                  f"write its export into {folder}: Is a directory")
    assert cached(conn, texts, embedder.model_id) == {}
    # Nor does a model opened directly on the file load it.
    with pytest.raises(onnx_runtime.BackendUnavailable, match="refuses .* does not match the SHA-256"):
        onnx_runtime.OnnxModel(path).encode(TEXTS)


def test_a_session_made_after_the_file_changed_checks_it_again(home, texts, conn):
    embedder = Embedder(choice=CHOICE)
    assert embed_chunks(conn, texts, embedder).embedded == len(TEXTS)  # the batch session, of the good file
    path = model_file(home)
    flip_bytes(path)
    block_exports(home)
    # A query is run by the model's other session, made only now: from the file as it is now.
    with pytest.raises(onnx_runtime.BackendUnavailable, match="does not match the SHA-256 recorded at its export"):
        embedder.encode(["grace"])


def test_an_export_without_a_recorded_hash_is_not_used_unchecked(home, texts, conn):
    """As an export made before the check: genuine, maybe, but nothing says so."""
    path = model_file(home)
    path.with_name("model.onnx.sha256").unlink(missing_ok=True)
    block_exports(home)
    embedder = Embedder(choice=CHOICE)
    unchecked = r"has no SHA-256 recorded at export \(model.onnx.sha256\)"
    with pytest.raises(onnx_runtime.BackendUnavailable, match=unchecked):
        embed_chunks(conn, texts, embedder)
    assert cached(conn, texts, embedder.model_id) == {}
