"""Versions are numbered by what was built, not by how the server stopped: after a crash the next
version follows the last one (a sequence, logged 32 values ahead, once made v34 follow v2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lectio.embedding.cache import embed_chunks
from lectio.embedding.model import Embedder
from lectio.index import loader, versions
from lectio.index.database import restart_embedded
from tests.crashes import crash_embedded
from lectio.rulesets.chunk import chunks_frame
from lectio.rulesets.registry import run_source

pytestmark = [pytest.mark.slow]

GUIDE = Path(__file__).parents[2] / "fixtures" / "staff_guide.md"

SOURCES = """
sources:
  - {id: guide, kind: document, format: markdown, path: staff_guide.md, acl: [group:staff]}
"""


def test_after_a_crash_the_next_version_follows_the_last(home_factory):
    with home_factory("lectio-numbers-", lambda: SOURCES, files=[GUIDE]) as home:
        frame = chunks_frame(run_source(home.settings.sources_file, "guide", home.settings.corpus_dir)[1])
        embedder = Embedder()
        with home.connect() as conn:
            embed_chunks(conn, frame, embedder)
            fingerprint = versions.fingerprint(frame, embedder.model_id)
            numbers = [loader.build_version(conn, frame, embedder.model_id, fingerprint).version for _ in range(2)]
        assert numbers == ["v1", "v2"]
        crash_embedded(home.settings)
        restart_embedded(home.settings)
        with home.connect() as conn:
            after = loader.build_version(conn, frame, embedder.model_id, fingerprint).version
        assert after == "v3"
