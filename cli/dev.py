"""`lectio dev` (the database and the Dagster UI), `lectio dagster` (Dagster's own CLI against this
home) and `lectio down` (the embedded database stopped)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from cli.output import print_payload
from lectio.index.database import ensure_database, stop_embedded
from lectio.settings import PROJECT_ROOT, load_settings

# The dagster CLI of this Python, as Dagster itself starts it: `.venv/bin/lectio dagster …` and
# `lectio dev` work without the venv's bin on PATH.
DAGSTER_CLI = [sys.executable, "-m", "dagster"]
# `dagster dev` warns on every start that the `dg` CLI supersedes it; lectio's project is not a
# `dg` project. That one notice is hidden, in every process of `lectio dev`; no other warning is.
DEV_WARNINGS = "ignore:Function `dev_command` is superseded:FutureWarning"


def _dagster_env() -> dict[str, str]:
    from pipelines.home import prepare_dagster_env

    settings = load_settings()
    return {**os.environ, **prepare_dagster_env(settings, ensure_database(settings))}


def dagster_command(args) -> int:
    """The dagster CLI with DAGSTER_HOME and storage of this home, run from the project root."""
    extra = args.dagster_args
    if extra[:2] == ["definitions", "validate"] and "-w" not in extra and "-m" not in extra:
        extra = [*extra, "-w", str(PROJECT_ROOT / "workspace.yaml")]
    return subprocess.run([*DAGSTER_CLI, *extra], cwd=PROJECT_ROOT, env=_dagster_env()).returncode


def dev(args) -> int:
    env = _dagster_env()

    def default_signals():
        # A process started in the background inherits ignored SIGINT/SIGTERM; dagster dev
        # then cannot be stopped. Give it the default handlers back.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    cmd = [*DAGSTER_CLI, "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(args.port)]
    env = {**ui_url_env(env, args.port),
           "PYTHONWARNINGS": ",".join(filter(None, [env.get("PYTHONWARNINGS"), DEV_WARNINGS]))}
    print(f"Dagster UI on http://127.0.0.1:{args.port} (Ctrl-C stops it; `lectio down` stops the database)")
    # Started in DAGSTER_HOME: from the project root `dagster dev` finds the project's dagster.yaml
    # there and warns it "will not be used" (the home holds its copy, pipelines/home.py).
    child = subprocess.Popen(cmd, cwd=env["DAGSTER_HOME"], env=env, preexec_fn=default_signals)

    def forward(signum, _frame):
        child.send_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    return child.wait()


def ui_url_env(env: dict, port: int) -> dict:
    """The alerts' links point at the UI this command serves (`--port`), unless LECTIO_UI_URL
    says where the team reaches it (behind a proxy, on another host)."""
    return env if env.get("LECTIO_UI_URL") else {**env, "LECTIO_UI_URL": f"http://127.0.0.1:{port}"}


def down(args) -> int:
    stopped = stop_embedded(load_settings())
    print_payload(args, {"stopped": stopped}, "database stopped" if stopped else "no embedded database running")
    return 0
