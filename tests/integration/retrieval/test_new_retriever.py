"""Adding a retriever is one module and one line in RETRIEVERS: a retriever written for the test
(tests/fixtures/retrievers/last_row.py) gets its settings in every SearchConfig, `--set` takes
them, and a search fuses its list where its weight asks, read as the caller. Run in a process of
its own, since the search settings gather the retrievers once, when they are first imported."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.network]

FOLDER = Path(__file__).resolve().parents[2] / "fixtures" / "retrievers"

SCRIPT = f"""
import json, sys
sys.path.insert(0, {str(FOLDER)!r})
from lectio.retrieval import retrievers
from last_row import LastRow
retrievers.RETRIEVERS += (LastRow,)  # the one line

from lectio.index import schema
from lectio.index.database import ensure_database
from lectio.retrieval.config import setting_types
from lectio.retrieval import SearchConfig, SearchRequest, search
from lectio.settings import load_settings

out = {{"settings": sorted(name for name in setting_types() if name.startswith("last_row."))}}
with ensure_database(load_settings()).connect() as conn:
    schema.ensure_schema(conn)
    for label, query, options in (("off", "peace", []), ("on", "peace", ["last_row.weight=50"]),
                                  ("other", "the love of God", ["last_row.weight=50"]),
                                  ("lexical", "peace", ["last_row.weight=50", "mode=lexical"])):
        response = search(conn, SearchRequest(query, k=5, config=SearchConfig.from_options(options)))
        out[label] = [hit.chunk_id for hit in response.results]
print(json.dumps(out))
"""


def test_a_retriever_is_one_module_and_one_line(main_run):
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["settings"] == ["last_row.weight"]
    # At its default weight (0) its list is left out; weighing 50 its one row leads every page.
    last = out["on"][0]
    assert last not in out["off"] and out["other"][0] == last
    # Declared for the hybrid: the lexical baseline never asks it.
    assert last not in out["lexical"]
