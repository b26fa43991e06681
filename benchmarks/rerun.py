"""What a run with nothing changed costs against a cold run of the same sources, in one run.

A throwaway LECTIO_HOME (the downloaded corpus is shared); `lectio run`'s main job on the
sources file cold (everything read, chunked, embedded, indexed), then again with nothing changed.
Reported: both wall times, their ratio, and the seconds per source of the rerun.

    python benchmarks/rerun.py [--sources tests/fixtures/sources.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", default=str(PROJECT / "tests" / "fixtures" / "sources.yaml"))
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="lectio-rerun-"))
    home.chmod(0o755)
    os.environ["LECTIO_HOME"] = str(home)
    os.environ["LECTIO_SOURCES"] = str(Path(args.sources).resolve())
    os.environ.setdefault("LECTIO_CORPUS_DIR", str(PROJECT / ".lectio" / "corpus"))
    os.environ.pop("DATABASE_URL", None)
    from lectio.index.database import stop_embedded
    from lectio.settings import load_settings
    from pipelines.runners import run_main

    settings = load_settings()
    try:
        started = time.perf_counter()
        cold = run_main(settings, echo=lambda _: None)
        cold_s = time.perf_counter() - started
        started = time.perf_counter()
        again = run_main(settings, echo=lambda _: None)
        again_s = time.perf_counter() - started
        print(json.dumps({
            "sources": len(cold.sources),
            "cold_s": round(cold_s, 1),
            "no_change_s": round(again_s, 1),
            "no_change_over_cold": round(again_s / cold_s, 3),
            "no_change_index_s": round(sum(again.index_stages.values()), 1),
            "same_version": cold.index.get("version") == again.index.get("version"),
            "embedded_on_rerun": sum(o.facts.get("embeddings", {}).get("embedded", 0) for o in again.sources),
        }, indent=2))
        return 0 if not again.failed else 1
    finally:
        stop_embedded(settings)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
