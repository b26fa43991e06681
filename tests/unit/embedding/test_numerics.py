"""The embedding numerics: what the CPU offers, what is chosen, and that the choice is in the key."""

from __future__ import annotations

import numpy as np
import pytest

from lectio.embedding import model, numerics, runtime_choice


@pytest.fixture()
def fresh(monkeypatch):
    for cached in (numerics.requested, runtime_choice._choose, model._configured, model._query_choice):
        cached.cache_clear()
    # The numerics on the torch backend: the backend's own settings are tests/unit/embedding/test_backends.py's.
    monkeypatch.setenv("LECTIO_EMBED_BACKEND", "torch")
    yield monkeypatch
    for cached in (numerics.requested, runtime_choice._choose, model._configured, model._query_choice):
        cached.cache_clear()


def test_offered_precisions_follow_the_cpu_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags : fpu sse avx512f avx512_vnni\n")
    assert numerics.offered(numerics.cpu_flags(info)) == ["fp32", "int8"]
    info.write_text("flags : fpu avx512_bf16 amx_int8\n")
    assert numerics.offered(numerics.cpu_flags(info)) == ["fp32", "bf16", "int8"]
    assert numerics.offered(numerics.cpu_flags(tmp_path / "missing")) == ["fp32"]


def test_measured_unless_told_and_the_precision_is_in_the_cache_key(fresh):
    fresh.delenv("LECTIO_EMBED_PRECISION", raising=False)
    assert numerics.requested() is None  # the machine's measurement decides (lectio.embedding.runtime_choice)
    fresh.setenv("LECTIO_EMBED_PRECISION", "fp32")
    numerics.requested.cache_clear()
    assert numerics.requested() == "fp32" and "+" not in model.model_id()
    numerics.requested.cache_clear()
    runtime_choice._choose.cache_clear()
    model._configured.cache_clear()
    fresh.setenv("LECTIO_EMBED_PRECISION", "BF16")
    assert numerics.requested() == "bf16" and model.model_id().endswith("+bf16")
    numerics.requested.cache_clear()
    fresh.setenv("LECTIO_EMBED_PRECISION", "fp8")
    with pytest.raises(ValueError, match="LECTIO_EMBED_PRECISION must be one of fp32, bf16, int8"):
        numerics.requested()


def test_the_model_is_a_setting_and_a_version_names_its_own(fresh):
    fresh.setenv("LECTIO_EMBED_MODEL", "all-mpnet-base-v2")
    with pytest.raises(ValueError, match="LECTIO_EMBED_MODEL must be one of all-MiniLM-L6-v2 or a model adapted from it .*not 'all-mpnet-base-v2'"):
        model.configured_model()
    fresh.delenv("LECTIO_EMBED_MODEL")
    fresh.setenv("LECTIO_EMBED_PRECISION", "fp32")
    model._configured.cache_clear()
    default = model.Embedder()
    assert default.for_model(default.model_id) is default
    # A version embedded in int8 is searched with int8 query vectors, whatever this process embeds in.
    int8 = default.for_model(f"{default.model_id}+int8")
    assert int8.choice == model.ModelChoice(model.MODEL_NAME, "int8") and int8.model_id == f"{default.model_id}+int8"
    with pytest.raises(ValueError, match="'e5-small@1.0' is not one this lectio can load"):
        default.for_model("e5-small@1.0")


def test_bf16_autocast_keeps_the_vectors_of_fp32():
    sentence_model = model._sentence_transformer()
    texts = ["The Lord is my shepherd; I shall lack nothing.", "Do not be anxious about anything."]
    import torch

    with torch.inference_mode():
        full = sentence_model.encode(texts, normalize_embeddings=True)
        with numerics.autocast("bf16"):
            half = sentence_model.encode(texts, normalize_embeddings=True)
    assert np.min(np.sum(full * half, axis=1)) > 0.999
