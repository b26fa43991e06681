"""The dagster CLI as lectio starts it: `lectio dagster …` without the venv's bin on PATH, a
`lectio run` whose console holds no Dagster beta or preview notice, and `lectio dev` hiding
Dagster's one notice that its `dev` command is superseded, and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.dev import DEV_WARNINGS
from tests.conftest import PROJECT

pytestmark = [pytest.mark.slow, pytest.mark.network]

LECTIO = [sys.executable, "-c", "import sys; from cli import main; sys.exit(main())"]
DEADLINE_S = 600  # loading the code location on a loaded 2-core machine


def _without_dagster_on_path() -> dict[str, str]:
    """The environment with no folder on PATH that holds a `dagster` (this Python's own folder, a
    pyenv shim folder), as when `.venv/bin/lectio` is run without activating the venv."""
    own = Path(sys.executable).resolve().parent
    folders = [f for f in os.environ["PATH"].split(os.pathsep)
               if f and Path(f).resolve() != own and not (Path(f) / "dagster").exists()]
    return {**os.environ, "PATH": os.pathsep.join(folders)}


def test_lectio_dagster_runs_without_the_venv_on_path(database):
    env = _without_dagster_on_path()
    assert subprocess.run(["sh", "-c", "command -v dagster"], env=env, capture_output=True).returncode != 0
    done = subprocess.run([*LECTIO, "dagster", "definitions", "validate"], cwd=PROJECT, env=env,
                          capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Validation successful" in done.stdout + done.stderr


def test_lectio_run_prints_no_beta_or_preview_notice(home_factory, tmp_path):
    (tmp_path / "tiny.txt").write_text("Tiny\n\nThe hall is open on Tuesdays.\n")
    sources = "sources:\n  - {id: tiny, kind: document, format: text, path: tiny.txt, acl: [public]}\n"
    with home_factory("lectio-console-", lambda: sources, [tmp_path / "tiny.txt"]):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}  # Python's default filters
        done = subprocess.run([*LECTIO, "run"], cwd=PROJECT, env=env, capture_output=True, text=True,
                              timeout=DEADLINE_S)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    console = done.stdout + done.stderr
    assert "BetaWarning" not in console and "PreviewWarning" not in console, console[-2000:]


EMIT = """
import warnings
from dagster import BetaWarning
from tests.dagster_internals import dev_command
try:
    dev_command().callback()  # Dagster's notice, then the command itself fails for want of arguments
except TypeError:
    pass
warnings.warn("Function `other` is currently in beta", BetaWarning)
"""


def test_lectio_dev_hides_only_the_superseded_notice():
    done = subprocess.run([sys.executable, "-c", EMIT], env={**os.environ, "PYTHONWARNINGS": DEV_WARNINGS},
                          capture_output=True, text=True, timeout=120)
    assert "SupersessionWarning" not in done.stderr and "dev_command" not in done.stderr
    assert "BetaWarning: Function `other`" in done.stderr
