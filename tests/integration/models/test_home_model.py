"""The home's model follows the live version, whatever a killed process left: a switch commits,
and only then does the home record which model its next runs embed with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lectio.embedding.packaged import ACTIVE, MODEL_NAME, adapted_dir, home_choice
from lectio.index import versions
from pipelines.runners import run_main

pytestmark = [pytest.mark.slow]

GUIDE = Path(__file__).parents[2] / "fixtures" / "staff_guide.md"
SOURCES = "sources:\n  - {id: guide, kind: document, format: markdown, path: staff_guide.md, acl: [group:staff]}\n"


def test_a_run_embeds_with_the_live_versions_model_after_a_switch_killed_before_the_home_followed(home_factory):
    with home_factory("lectio-follow-", lambda: SOURCES, files=[GUIDE]) as home:
        first = run_main(home.settings, echo=lambda _: None)
        assert first.index["ok"] and first.index["live"]
        with home.connect() as conn:
            model = versions.get_version(conn, versions.live_version(conn)).model_id
        # A switch back to the packaged model's version, killed after its commit and before the
        # home cleared its adapted model (the file switch_live's follow_live would have removed).
        stale = f"{MODEL_NAME}-adapted-0123456789ab"
        folder = adapted_dir(home.settings.home)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ACTIVE).write_text(json.dumps({"id": stale}) + "\n")
        assert home_choice(home.settings.home) == stale

        again = run_main(home.settings, echo=lambda _: None)
        assert again.index["ok"] and not again.failed
        assert home_choice(home.settings.home) is None
        with home.connect() as conn:
            assert versions.get_version(conn, versions.live_version(conn)).model_id == model
