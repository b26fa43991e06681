"""`lectio model show` says how the home's ONNX query session runs, as measured."""

from pipelines.model_command import describe

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
