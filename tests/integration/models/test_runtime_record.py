"""A corrupt runtime record is ignored, never a traceback, and showing it only reads (issue 63, item 4).

The home's backend.json with `"query": "onnx"` or `"query": {"threads": 1}` ended `lectio search`,
`lectio run` and `lectio model show` in TypeError/KeyError tracebacks, and `"provisional": true`
crashed `model show`; `model show` over an unreadable record started a measurement (> 200 s).
A record that does not parse as the schema is now ignored: a search embeds on the version's own
runtime, a run records its choice again, and `model show` says so in one line without measuring.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lectio.embedding import measurement, runtime_choice, runtime_record
from lectio.embedding.model import MODEL_NAME, release_of
from cli import main as cli

pytestmark = [pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CORRUPTIONS = {
    "query a string": {"query": "onnx"},
    "query without its runtime": {"query": {"threads": 1}},
    "provisional true": {"provisional": True},
    "candidates a list": {"candidates": ["onnx/fp32"]},
    "machine a string": {"machine": "here"},
}


def sources_yaml() -> str:
    return "sources:\n  - {id: rota, kind: document, format: text, path: rota.txt, acl: [public]}\n"


@pytest.fixture(scope="module")
def home(home_factory):
    with home_factory("lectio-runtime-record-home-", sources_yaml) as home:
        (home.folder / "rota.txt").write_text("Volunteer rota\n\nSunday: tea and coffee after the grace.\n")
        from pipelines.runners import run_main

        assert run_main(home.settings, echo=lambda _: None).index["live"]
        yield home


@pytest.fixture()
def chosen_by_the_record(monkeypatch):
    """The runtime left to the home's record, as on a user's machine; a measurement is a failure."""
    monkeypatch.delenv("LECTIO_EMBED_BACKEND", raising=False)
    monkeypatch.delenv("LECTIO_EMBED_PRECISION", raising=False)

    def no_measuring(*args, **kwargs):
        raise AssertionError("measured")

    monkeypatch.setattr(measurement, "measure", no_measuring)
    return runtime_record.record_file(MODEL_NAME, release_of(MODEL_NAME))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _valid(machine) -> dict:
    return {"backend": "onnx", "precision": "fp32", "query": {"backend": "onnx", "precision": "fp32"},
            "provisional": {"input_bytes": 60, "measure_from_bytes": runtime_choice.MEASURE_FROM_BYTES}, "machine": machine}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_record_is_ignored_at_every_door(home, chosen_by_the_record, corruption, capsys):
    path = chosen_by_the_record
    _write(path, json.dumps(_valid(runtime_record.machine()) | CORRUPTIONS[corruption]))
    capsys.readouterr()
    assert cli(["search", "grace", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["results"] and "Traceback" not in err

    # Showing reads only: one line saying the record is ignored, the file as it was.
    before = path.read_text()
    assert cli(["model", "show"]) == 0
    out, err = capsys.readouterr()
    assert "does not parse as a runtime record and is ignored" in out and "Traceback" not in err
    assert path.read_text() == before

    # A run needs a runtime: it records one again (provisional for so small a home, not measured).
    assert cli(["run", "--json"]) == 0, capsys.readouterr()
    assert runtime_record.valid_record(json.loads(path.read_text()))


@pytest.mark.parametrize("text", ["{", "[]", '{"backend": "onnx"}'], ids=["not json", "a list", "no machine"])
def test_model_show_over_an_unreadable_record_does_not_measure(home, chosen_by_the_record, text, capsys):
    _write(chosen_by_the_record, text)
    capsys.readouterr()
    assert cli(["model", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["recorded"] is None and "is ignored" in shown["why"]
    assert chosen_by_the_record.read_text() == text


@pytest.mark.parametrize("query", [{"backend": "onnx", "precision": "int8"}, {"backend": "torch", "precision": "bf16"}],
                         ids=["int8", "bf16"])
def test_a_query_runtime_not_interchangeable_with_the_index_is_not_obeyed(home, chosen_by_the_record, query):
    """A record whose query runtime is not fp32 (a measurement records no other) is obeyed no
    more: queries of an fp32 version were embedded in int8 (another model's vectors)."""
    import os
    import subprocess
    import sys

    from lectio.embedding import onnx_runtime

    _write(chosen_by_the_record, json.dumps(_valid(runtime_record.machine()) | {"query": query}))
    release = release_of(MODEL_NAME)
    assert runtime_choice.query_runtime(MODEL_NAME, release, ("onnx", "fp32")) == ("onnx", "fp32")
    # A search in a process of its own, as a user's: nothing exported or loaded for int8.
    int8 = onnx_runtime.model_file(MODEL_NAME, release, "int8")
    int8.unlink(missing_ok=True)
    search = subprocess.run([sys.executable, "-m", "cli", "search", "grace", "--json"], env=os.environ,
                            capture_output=True, text=True, cwd=Path(__file__).resolve().parents[3], timeout=300)
    assert search.returncode == 0 and json.loads(search.stdout)["results"], search.stderr
    assert not int8.exists()
