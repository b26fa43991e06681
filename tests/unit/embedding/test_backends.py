"""The embedding backend: a setting beside the precision, part of the model id (so of every cache
key, fingerprint and version's recorded model), chosen by this machine's measurement when unset,
and a one-line error when it cannot load."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import pytest

from lectio.embedding import backends, comparison, measurement, model, numerics, onnx_runtime, runtime_choice, runtime_record
from lectio.embedding.model import MODEL_NAME, Embedder, ModelChoice


def _clear():
    for cached in (numerics.requested, runtime_choice._choose, model._configured, model._query_choice):
        cached.cache_clear()


@pytest.fixture()
def fresh(monkeypatch):
    _clear()
    # fp32 fixed: the backend is what these tests vary (left open, bf16 would be measured too).
    monkeypatch.setenv("LECTIO_EMBED_PRECISION", "fp32")
    yield monkeypatch
    _clear()


def test_the_backend_is_part_of_the_model_id_and_a_version_names_its_own():
    torch_fp32, onnx_fp32 = ModelChoice(), ModelChoice(backend="onnx")
    release = torch_fp32.release
    # torch fp32 keeps the id every version made before this backend records.
    assert torch_fp32.id == f"{MODEL_NAME}@{release}"
    assert onnx_fp32.id == f"{MODEL_NAME}@{release}+onnx" != torch_fp32.id
    int8 = ModelChoice(precision="int8", backend="onnx")
    assert int8.id == f"{MODEL_NAME}@{release}+int8+onnx"
    assert len({torch_fp32.id, onnx_fp32.id, int8.id, ModelChoice(precision="int8").id}) == 4
    for choice in (torch_fp32, onnx_fp32, int8, ModelChoice(precision="bf16"), ModelChoice(precision="int8")):
        assert ModelChoice.of_id(choice.id) == choice
    # Either order of the parts names the same choice; nonsense does not load.
    assert ModelChoice.of_id(f"{MODEL_NAME}@{release}+onnx+int8") == int8
    for bad in (f"{MODEL_NAME}@{release}+bf16+onnx", f"{MODEL_NAME}@{release}+onnx+torch",
                f"{MODEL_NAME}@{release}+tpu", f"{MODEL_NAME}@{release}+int8+fp32"):
        with pytest.raises(ValueError, match="is not one this lectio can load"):
            ModelChoice.of_id(bad)
    torch_embedder = Embedder(choice=torch_fp32)
    onnx_embedder = torch_embedder.for_model(onnx_fp32.id)
    assert onnx_embedder.choice == onnx_fp32 and onnx_embedder.model_id == onnx_fp32.id
    assert onnx_embedder.for_model(onnx_fp32.id) is onnx_embedder
    assert onnx_embedder.for_model(torch_fp32.id).choice == torch_fp32


def test_the_backend_setting_is_checked_and_feeds_the_model_id(fresh):
    fresh.setenv("LECTIO_EMBED_BACKEND", "torch")
    torch_id = model.model_id()
    _clear()
    fresh.setenv("LECTIO_EMBED_BACKEND", " ONNX ")
    assert model.configured_model().backend == "onnx" and model.model_id() == torch_id + "+onnx"
    _clear()
    fresh.setenv("LECTIO_EMBED_BACKEND", "tensorrt")
    with pytest.raises(ValueError, match="LECTIO_EMBED_BACKEND must be one of torch, onnx, not 'tensorrt'"):
        model.configured_model()
    _clear()
    fresh.setenv("LECTIO_EMBED_BACKEND", "onnx")
    fresh.setenv("LECTIO_EMBED_PRECISION", "bf16")
    with pytest.raises(ValueError, match="LECTIO_EMBED_PRECISION=bf16 does not run on the onnx embedding backend"):
        model.configured_model()


def test_a_backend_the_caller_names_wins_and_the_setting_stays_the_default(fresh):
    from resources import EmbedderResource

    fresh.setenv("LECTIO_EMBED_BACKEND", "onnx")
    assert Embedder(backend="torch").choice.backend == "torch"
    assert Embedder().choice.backend == "onnx"
    # The Dagster resource passes its field in; unset, the setting decides as it does for the CLI.
    assert EmbedderResource(backend="torch").model_id == Embedder(backend="torch").model_id
    assert EmbedderResource().model_id == model.model_id() == Embedder(backend="onnx").model_id
    with pytest.raises(ValueError, match="the embedding backend must be one of torch, onnx, not 'tpu'"):
        Embedder(backend="tpu")


def test_a_backend_that_cannot_load_says_so_in_one_line(fresh, capsys, tmp_path):
    fresh.setenv("LECTIO_HOME", str(tmp_path / "home"))  # no measurement says torch gives ONNX's vectors
    fresh.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    assert not onnx_runtime.available()
    fresh.setenv("LECTIO_EMBED_BACKEND", "onnx")
    with pytest.raises(onnx_runtime.BackendUnavailable) as raised:
        model.configured_model()
    message = str(raised.value)
    assert "\n" not in message and message.startswith("the onnx embedding backend cannot load: onnxruntime is not "
                                                      "installed") and "LECTIO_EMBED_BACKEND=torch" in message
    # A version embedded by ONNX Runtime cannot be searched here: one line too (search shows it).
    with pytest.raises(ValueError, match="onnxruntime is not installed"):
        Embedder(choice=ModelChoice()).for_model(ModelChoice(backend="onnx").id)
    # The CLI says it in one line, no traceback.
    from cli import main

    assert main(["serve"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"lectio serve: {message}"
    # Unset, the backend falls back to torch where onnxruntime is missing.
    _clear()
    fresh.delenv("LECTIO_EMBED_BACKEND")
    fresh.setenv("LECTIO_EMBED_PRECISION", "fp32")
    assert model.configured_model().backend == "torch"


def test_a_model_file_that_does_not_load_is_one_line(tmp_path):
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(onnx_runtime.BackendUnavailable) as raised:
        onnx_runtime.OnnxModel(broken).encode(["grace"])
    assert "\n" not in str(raised.value) and str(raised.value).startswith(
        f"the onnx embedding backend cannot load {broken}")


def test_unset_the_backend_is_the_one_this_home_measured(fresh, tmp_path):
    home = tmp_path / "home"
    fresh.setenv("LECTIO_HOME", str(home))
    fresh.delenv("LECTIO_EMBED_BACKEND", raising=False)
    choice = ModelChoice()
    calls = []

    def measure(name, release, pool, home=None, sample=None):
        calls.append(name)
        return {"backend": "onnx", "precision": "fp32", "query": {"backend": "onnx", "precision": "fp32"},
                "candidates": {backends.key(c): {"texts_per_second": 100.0} for c in pool}}

    fresh.setattr(measurement, "measure", measure)
    assert model.configured_model() == replace(choice, backend="onnx")
    recorded = home / "models" / f"{choice.name}@{choice.release}" / runtime_record.CHOICE_FILE
    assert json.loads(recorded.read_text())["machine"] == runtime_record.machine()
    # Read, not measured again: a choice that flipped with the machine's noise would re-embed everything.
    _clear()
    assert model.configured_model().backend == "onnx" and len(calls) == 1
    # Another machine measures again.
    recorded.write_text(json.dumps(json.loads(recorded.read_text()) | {"machine": {"cpu": "another"}}))
    _clear()
    fresh.setattr(measurement, "measure", lambda *a, **k: {"backend": "torch", "precision": "fp32", "candidates": {}})
    assert model.configured_model().backend == "torch"
    assert json.loads(recorded.read_text())["backend"] == "torch"
    # bf16 is torch's autocast: torch, whatever was measured.
    _clear()
    fresh.setenv("LECTIO_EMBED_PRECISION", "bf16")
    assert model.configured_model() == ModelChoice(precision="bf16")


def test_a_home_whose_sources_do_not_pay_for_a_measurement_is_provisional_until_one_does(fresh, tmp_path):
    home = tmp_path / "home"
    fresh.setenv("LECTIO_HOME", str(home))
    fresh.delenv("LECTIO_EMBED_BACKEND", raising=False)
    choice, calls = ModelChoice(), []

    def measure(name, release, pool, home=None, sample=None):
        calls.append(name)
        return {"backend": "torch", "precision": "fp32", "query": {"backend": "onnx", "precision": "fp32"},
                "candidates": {backends.key(c): {"texts_per_second": 100.0} for c in pool}}

    fresh.setattr(measurement, "measure", measure)
    small = runtime_choice.MEASURE_FROM_BYTES - 1
    assert not runtime_choice.settled(choice.name, choice.release)
    record = runtime_choice.settle(choice.name, choice.release, small)
    # Nothing measured: the first candidate, which reproduces fp32 and spares the torch import.
    assert calls == [] and (record["backend"], record["precision"]) == backends.ORDER[0]
    assert record["provisional"] == {"input_bytes": small, "measure_from_bytes": runtime_choice.MEASURE_FROM_BYTES}
    assert model.configured_model() == replace(choice, backend="onnx") and calls == []
    assert runtime_choice.settle(choice.name, choice.release, small)["provisional"] and calls == []
    assert not runtime_choice.settled(choice.name, choice.release)
    # The first run whose sources weigh enough measures, and this process follows the new record
    # without a cache being cleared: a sensor's long-lived process must not keep the provisional id.
    before = model.model_id()
    assert runtime_choice.settle(choice.name, choice.release, runtime_choice.MEASURE_FROM_BYTES)["backend"] == "torch"
    assert calls == [choice.name] and runtime_choice.settled(choice.name, choice.release)
    assert model.configured_model() == choice and model.model_id() != before
    # Measured, it stays: a lighter sources file later does not make it provisional again.
    assert "provisional" not in runtime_choice.settle(choice.name, choice.release, 0) and len(calls) == 1
    # Weight not known (a SWORD module not fetched yet) measures, as a home always did.
    (home / "models" / f"{choice.name}@{choice.release}" / runtime_record.CHOICE_FILE).unlink()
    runtime_choice.settle(choice.name, choice.release, None)
    assert len(calls) == 2


def test_the_runtime_line_says_what_the_inputs_weigh_now_not_what_they_weighed_first(fresh, tmp_path):
    """Issue 63, item 13: a provisional record kept the weight of the home's first sources."""
    fresh.setenv("LECTIO_HOME", str(tmp_path / "home"))
    fresh.delenv("LECTIO_EMBED_BACKEND", raising=False)
    choice = ModelChoice()
    first = runtime_choice.settle(choice.name, choice.release, 0)
    now = runtime_choice.settle(choice.name, choice.release, 1_234)
    assert now["provisional"]["input_bytes"] == 1_234 and now["backend"] == first["backend"]
    assert "inputs (1,234 bytes)" in runtime_record.rounds_told(runtime_record.recorded(choice.name, choice.release))


def test_a_file_refused_unread_weighs_nothing_toward_a_measurement(tmp_path):
    """Issue 63, item 13: only what a reader reads counts toward the weight that buys a
    measurement; a file over the reader's size limit is refused before a byte of it is read."""
    from lectio.readers.raw import MAX_FILE_BYTES
    from lectio.rulesets.registry import input_bytes, read_source
    from lectio.sources import SourceError, load_source

    with (tmp_path / "dump.txt").open("wb") as dump:
        dump.truncate(MAX_FILE_BYTES + 1)
    (tmp_path / "rota.txt").write_text("Sunday: tea and coffee after the service.\n")
    sources = tmp_path / "sources.yaml"
    sources.write_text("sources:\n"
                       "  - {id: dump, kind: document, format: text, path: dump.txt, acl: [public]}\n"
                       "  - {id: rota, kind: document, format: text, path: rota.txt, acl: [public]}\n")
    with pytest.raises(SourceError, match="over the 16 MiB"):
        read_source(load_source(sources, "dump"), tmp_path)
    assert input_bytes(sources, tmp_path) == (tmp_path / "rota.txt").stat().st_size


def test_a_provisional_choice_keeps_what_the_home_recorded_on_another_machine(fresh, tmp_path):
    home = tmp_path / "home"
    fresh.setenv("LECTIO_HOME", str(home))
    fresh.delenv("LECTIO_EMBED_BACKEND", raising=False)
    fresh.setattr(measurement, "measure", lambda *a, **k: pytest.fail("a light home measured"))
    choice = ModelChoice()
    path = home / "models" / f"{choice.name}@{choice.release}" / runtime_record.CHOICE_FILE
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"backend": "torch", "precision": "fp32", "machine": {"cpu": "another"}}))
    # A home keeps its index's model: the other machine's choice, still open here, is kept.
    assert runtime_choice.settle(choice.name, choice.release, 10)["backend"] == "torch"
    assert json.loads(path.read_text())["machine"] == runtime_record.machine()
    # Nothing to settle where the settings fix the runtime.
    fresh.setenv("LECTIO_EMBED_BACKEND", "onnx")
    assert runtime_choice.settle(choice.name, choice.release, None) is None and runtime_choice.settled(choice.name, choice.release)


def _found(seconds: dict, relations: dict | None = None, query_ms: dict | None = None) -> dict:
    relations, query_ms = relations or {}, query_ms or {}
    return {k: {"seconds": times, "equivalence": {"relation": relations.get(k, "interchangeable")},
                "query_ms": {"p50": query_ms.get(k, 5.0)}} for k, times in seconds.items()}


def test_the_fastest_close_runtime_ingests_and_the_exact_ones_win_ties():
    close = {"torch/bf16": "close"}
    # bf16 autocast on a CPU with AMX: much faster, close to fp32, so it ingests; queries stay exact.
    amx = comparison.decide(_found({"onnx/fp32": [4.0, 4.1, 4.2, 4.0, 4.1], "torch/fp32": [4.3, 4.2, 4.4, 4.3, 4.2],
                                  "torch/bf16": [1.9, 2.0, 1.8, 1.9, 2.0]}, close, {"onnx/fp32": 3.0, "torch/fp32": 12.0}))
    assert amx["ingest"] == ("torch", "bf16") and amx["query"] == {"backend": "onnx", "precision": "fp32"}
    # Within TIE of the fastest, ONNX fp32 wins: it reproduces fp32 and spares the torch import.
    tie = comparison.decide(_found({"onnx/fp32": [4.3] * 5, "torch/fp32": [4.0] * 5}))
    assert tie["ingest"] == ("onnx", "fp32")
    assert comparison.decide(_found({"onnx/fp32": [5.0] * 5, "torch/fp32": [4.0] * 5}))["ingest"] == ("torch", "fp32")
    # Faster than ONNX, and within TIE of each other: the exact one of the two wins.
    both = _found({"onnx/fp32": [6.0] * 5, "torch/fp32": [4.2] * 5, "torch/bf16": [4.0] * 5}, close)
    assert comparison.decide(both)["ingest"] == ("torch", "fp32")
    # bf16 slower than fp32 (AVX-512 without native bf16): never chosen.
    slow = comparison.decide(_found({"torch/fp32": [4.0] * 5, "torch/bf16": [12.0] * 5}, close))
    assert slow["ingest"] == ("torch", "fp32")
    # Too few rounds for any interval: what is preferred stays, however fast the other looked.
    assert comparison.decide(_found({"torch/fp32": [4.0] * 3, "torch/bf16": [1.0] * 3}, close))["ingest"] == ("torch", "fp32")


def test_under_load_the_choice_follows_the_paired_rounds_not_whether_the_machine_was_quiet():
    close = {"torch/bf16": "close"}
    # As measured beside other work: bf16 1.5-1.7x faster in six rounds of seven, and half a
    # percent slower in the one a burst fell on. That round once threw the whole measurement away;
    # with one more round the interval leaves it out.
    unlucky = {"torch/fp32": [8.9, 9.1, 8.6, 9.3, 8.8, 5.48, 9.0, 9.2],
               "torch/bf16": [5.6, 5.5, 5.4, 5.9, 5.3, 5.51, 5.6, 5.5]}
    assert not comparison.decided({k: v[:7] for k, v in unlucky.items()})  # seven rounds: go on
    assert comparison.decided(unlucky)
    assert comparison.decide(_found(unlucky, close))["ingest"] == ("torch", "bf16")
    # Load that slows everything (rounds spread 2x) still leaves bf16 faster in every pair.
    busy = _found({"torch/fp32": [12.0, 8.2, 13.5, 18.2, 9.9], "torch/bf16": [7.7, 5.2, 8.9, 11.2, 6.0]}, close)
    assert comparison.decide(busy)["ingest"] == ("torch", "bf16")
    # Faster in half the rounds only: the interval holds 1, fp32 stays, and the rounds are not decided.
    mixed = {"torch/fp32": [8.2, 13.5, 9.0, 7.0, 8.0, 9.0], "torch/bf16": [8.6, 2.2, 9.5, 5.0, 8.5, 6.0]}
    assert not comparison.decided(mixed)
    assert comparison.decide(_found(mixed, close))["ingest"] == ("torch", "fp32")
    # Faster in every round but not by TIE at the median: fp32 stays, and that is decided.
    barely = {"torch/fp32": [5.2, 5.1, 5.3, 5.2, 5.0], "torch/bf16": [5.0, 5.0, 5.0, 5.0, 4.9]}
    assert comparison.decided(barely)
    assert comparison.decide(_found(barely, close))["ingest"] == ("torch", "fp32")


def test_the_interval_for_a_median_needs_rounds_enough_and_leaves_the_outliers_out():
    assert comparison.median_interval([1.6, 1.5, 1.7, 1.6]) is None
    assert comparison.median_interval([1.6, 1.5, 1.7, 1.6, 0.9]) == (0.9, 1.7)
    assert comparison.median_interval([1.6, 1.5, 1.7, 1.6, 0.9, 1.6, 1.5, 9.0]) == (1.5, 1.7)


def test_vectors_are_interchangeable_close_or_apart():
    rng = np.random.default_rng(3)
    reference = rng.normal(size=(64, 384)).astype(np.float32)
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)

    def moved(scale):
        found = reference + rng.normal(scale=scale, size=reference.shape).astype(np.float32)
        return found / np.linalg.norm(found, axis=1, keepdims=True)

    assert comparison.relation(moved(1e-7), reference)["relation"] == "interchangeable"
    assert comparison.relation(moved(2e-4), reference)["relation"] == "close"
    assert comparison.relation(moved(2e-2), reference)["relation"] == "apart"


def test_candidates_follow_the_cpu_and_the_settings():
    amx, plain = {"avx512f", "amx_bf16", "avx512_bf16"}, {"avx2"}
    assert backends.candidates(None, None, amx) == [("onnx", "fp32"), ("torch", "fp32"), ("torch", "bf16")]
    assert backends.candidates(None, None, plain) == [("onnx", "fp32"), ("torch", "fp32")]
    assert backends.candidates("torch", None, amx) == [("torch", "fp32"), ("torch", "bf16")]
    assert backends.candidates(None, "bf16", plain) == [("torch", "bf16")]  # asked for: as asked
    assert backends.candidates(None, "int8", amx) == [("torch", "int8")]
    assert backends.candidates("onnx", "fp32", amx) == [("onnx", "fp32")]


def test_a_query_thread_runs_torch_on_one_thread_without_importing_it_first():
    import torch

    assert torch.get_num_threads() >= 1
    embedder = Embedder(choice=ModelChoice())
    with ThreadPoolExecutor(max_workers=1, initializer=model.one_model_thread) as pool:
        threads = pool.submit(lambda: (embedder.encode(["grace"]), torch.get_num_threads())[1]).result()
    assert threads == 1


def test_an_export_that_fails_is_one_line(monkeypatch, tmp_path):
    def broken(source, out):
        raise RuntimeError("Exporting the operator 'aten::scaled_dot_product_attention' is not supported\nat line 3")

    monkeypatch.setattr(onnx_runtime, "_torch_export", broken)
    choice = ModelChoice(backend="onnx")
    with pytest.raises(onnx_runtime.BackendUnavailable) as raised:
        onnx_runtime.ensure_export(choice.name, choice.release, "fp32", tmp_path / "home")
    assert str(raised.value) == ("the onnx embedding backend cannot load: exporting all-MiniLM-L6-v2 failed: Exporting "
                                 "the operator 'aten::scaled_dot_product_attention' is not supported "
                                 "(set LECTIO_EMBED_BACKEND=torch)")
    # Nothing half-made is left to be loaded next time.
    folder = onnx_runtime.model_dir(choice.name, choice.release, tmp_path / "home")
    assert not (folder / onnx_runtime.FP32_FILE).exists() and not list(folder.glob(".export-*"))
    # Unset, a failed export leaves torch the backend, recorded with why.
    record = measurement.measure(choice.name, choice.release, [("onnx", "fp32"), ("torch", "fp32")], tmp_path / "home", 16)
    assert (record["backend"], record["precision"]) == ("torch", "fp32")
    assert record["candidates"]["onnx/fp32"]["reason"].startswith("the onnx embedding backend cannot load: exporting")


def test_a_query_runs_on_every_core_only_where_that_measured_faster_alone_and_beside_a_busy_core():
    one, two, spinning = [4.0, 3.0, 9.0, 5.0] * 5, [2.5, 2.0, 5.5, 3.0] * 5, [2.2, 1.8, 5.0, 2.8] * 5
    quiet_beside = {"1": [6.0] * 20, "2": [5.0] * 20, "2+spin": [6.2] * 20}
    assert comparison.threads_choice({"1": one, "2": two}, quiet_beside) == "2"
    # The best median gain of those that keep p95 beside a busy core within TIE of one thread's.
    assert comparison.threads_choice({"1": one, "2": two, "2+spin": spinning}, quiet_beside) == "2+spin"
    spin_stalls = quiet_beside | {"2+spin": [5.0] * 18 + [40.0] * 2}
    assert comparison.threads_choice({"1": one, "2": two, "2+spin": spinning}, spin_stalls) == "2"
    # Within QUERY_THREADS_GAIN of one thread: the second core stays the database's.
    barely = [t / 1.05 for t in one]
    assert comparison.threads_choice({"1": one, "2": barely}, quiet_beside) == "1"
    # Faster alone but slower at p95 beside a busy core (a hybrid search's lexical side): one.
    assert comparison.threads_choice({"1": one, "2": two}, {"1": [6.0] * 20, "2": [5.0] * 18 + [40.0] * 2}) == "1"
    assert comparison.threads_choice({"1": one}, {"1": one}) == "1"
    # Faster over both rounds taken together, but not in the first: not chosen.
    one_round_only = {"1": one * 3, "2": [t * 1.7 for t in two] + two * 2}
    assert comparison.threads_choice(one_round_only, quiet_beside, rounds=1) == "2"
    assert comparison.threads_choice(one_round_only, quiet_beside, rounds=3) == "1"


def test_the_query_session_is_the_one_this_home_measured_on_this_machine(tmp_path, monkeypatch):
    monkeypatch.setattr(onnx_runtime, "cores", lambda: 4)  # the count this machine's record names
    choice = ModelChoice()
    folder = onnx_runtime.model_dir(choice.name, choice.release, tmp_path)
    folder.mkdir(parents=True)

    def session(query: dict, machine: dict | None = None) -> tuple[int, bool]:
        record = {"backend": "torch", "precision": "fp32", "query": {"backend": "onnx", "precision": "fp32"} | query,
                  "machine": machine or runtime_record.machine()}
        (folder / runtime_record.CHOICE_FILE).write_text(json.dumps(record))
        return runtime_choice.query_session(choice.name, choice.release, tmp_path)

    assert runtime_choice.query_session(choice.name, choice.release, tmp_path) == (1, False)  # nothing measured
    assert session({"threads": 4, "spin": True}) == (4, True)
    assert session({"threads": 4, "spin": False}) == (4, False)
    assert session({}) == (1, False)  # measured before threads were
    assert session({"threads": 4, "spin": True}, {"cpu": "another"}) == (1, False)
    for nonsense in ({"threads": 0}, {"threads": 9}, {"threads": "2"}, {"threads": True},
                     {"threads": 2, "spin": "yes"}):
        assert session(nonsense) == (1, False)


def test_the_rounds_own_batches_give_the_vectors_equivalence_is_judged_on(monkeypatch):
    """Issue 50, item 2: a new home's measurement embeds the measurement texts once per runtime,
    in the timed rounds, and judges each runtime's equivalence to torch fp32 on those vectors: no
    separate pass over the texts. A runtime whose vectors are apart is timed but never chosen."""
    embedded: dict[str, list[str]] = {"torch/fp32": [], "torch/bf16": []}

    def meaning(text: str) -> np.ndarray:
        vector = np.random.default_rng(abs(hash(text)) % 2**32).normal(size=16)
        return vector / np.linalg.norm(vector)

    def runner(name, release, runtime, home):
        k, noise = backends.key(runtime), np.random.default_rng(5)

        def batch(texts):
            embedded[k].extend(texts)
            exact = np.stack([meaning(t) for t in texts])
            return exact if runtime == backends.REFERENCE else np.abs(exact + noise.normal(size=exact.shape))
        return batch, (lambda query: batch([query]))

    monkeypatch.setattr(measurement, "_runner", runner)
    record = measurement.measure(MODEL_NAME, "0", [("torch", "fp32"), ("torch", "bf16")])
    rounds = len(record["candidates"]["torch/fp32"]["seconds"])
    texts = measurement.texts(measurement.TEXTS)
    for k in embedded:
        # A few texts to warm up, then one batch a round (and one query per latency probe for the timed).
        batches = embedded[k][8:8 + rounds * measurement.TIMED_TEXTS]
        assert sorted(batches[:len(texts)]) == sorted(texts)  # the first pass covers every text once
    assert rounds == measurement.MIN_ROUNDS
    assert record["candidates"]["torch/bf16"]["equivalence"]["relation"] == "apart"
    assert "seconds" not in record["candidates"]["torch/bf16"]
    assert record["ingest"] == ("torch", "fp32")
