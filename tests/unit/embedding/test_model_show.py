"""`lectio model show` says how the home's ONNX query session runs, as measured."""

from cli.model import describe

MACHINE = {"cpu": "Some CPU", "cores": 2, "onnxruntime": "1", "torch": "2"}


def _record(query: dict) -> dict:
    return {"machine": MACHINE, "backend": "torch", "precision": "bf16", "query": query, "candidates": {}}


def test_the_measured_query_threads_are_shown():
    shown = describe(_record({"backend": "onnx", "precision": "fp32", "threads": 2, "spin": True}))
    assert "query session: 2 intra-op thread(s), spinning within a run" in shown


def test_a_record_from_before_the_measurement_runs_one_thread():
    shown = describe(_record({"backend": "onnx", "precision": "fp32"}))
    assert "query session: 1 intra-op thread(s)" in shown
    assert "spinning" not in shown


def test_no_query_session_line_for_torch_queries():
    assert "query session" not in describe(_record({"backend": "torch", "precision": "fp32"}))


def test_a_provisional_choice_says_it_was_not_measured_and_what_would_measure_it():
    record = {"machine": MACHINE, "backend": "onnx", "precision": "fp32",
              "query": {"backend": "onnx", "precision": "fp32"},
              "provisional": {"input_bytes": 895_063, "measure_from_bytes": 2_000_000}}
    shown = describe(record)
    assert "ingest: onnx/fp32; queries: onnx/fp32; provisional, not measured" in shown
    assert "895,063 bytes" in shown and "lectio model measure" in shown and "measured ?" not in shown


def test_showing_in_a_home_without_a_database_creates_none(tmp_path, monkeypatch, capsys):
    # Which trained models the live version reads is the database's to say; a home with none yet
    # has no live version, and `lectio model show` only reads.
    from cli import main as cli

    home = tmp_path / "home"
    monkeypatch.setenv("LECTIO_HOME", str(home))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert cli(["model", "show"]) == 0
    assert "learned rankers: none trained" in capsys.readouterr().out
    assert not (home / "pgdata").exists()
