"""A new user's first answer: `lectio run` over the fixture sources in a fresh home, then one
`lectio search`, timed by the wall clock as a terminal shows it, against a bare baseline in the
same rounds.

The bare baseline is the work itself without lectio around it: a fresh Python process that loads
the packaged model with sentence-transformers (torch fp32), embeds every chunk text the run
indexed and ranks them for the query by cosine. The ratio (lectio / bare) is the claim; the
absolute seconds follow the machine's load. Each round makes a new home (a new embedded server, a
new Dagster instance, the model exported to ONNX again); with --measure the runtime is left to the
home, as on a fresh clone (the fixture sources weigh less than a measurement pays for, so the home
records a provisional runtime: lectio.embedding.runtime_choice.settle), otherwise it is set to ONNX
fp32. With --busy a process keeps one core busy meanwhile, as a machine people are using does. The
corpus is shared (LECTIO_CORPUS_DIR, fetched once before the rounds), as a second home on one
machine shares it.

    python benchmarks/first_answer.py [--rounds 3] [--measure] [--busy]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from homes import PROJECT, home_env  # run from benchmarks/, beside it

SOURCES = PROJECT / "tests" / "fixtures" / "sources.yaml"
QUERY = "do not be anxious about anything"

BARE = """
import json, sys
import numpy as np
from sentence_transformers import SentenceTransformer
from lectio.embedding.packaged import model_path
texts = json.load(open(sys.argv[1]))
model = SentenceTransformer(str(model_path()), device="cpu")
vectors = model.encode(texts, batch_size=64, normalize_embeddings=True)
query = model.encode([sys.argv[2]], normalize_embeddings=True)[0]
print(texts[int(np.argmax(vectors @ query))][:60])
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--measure", action="store_true", help="leave the runtime to the home's measurement")
    parser.add_argument("--busy", action="store_true", help="keep one core busy meanwhile")
    args = parser.parse_args()
    from lectio.embedding.numerics import cpu_model

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        rounds = [_round(args.measure) for _ in range(args.rounds)]
    finally:
        if busy:
            busy.kill()
            busy.wait()
    ratios = [r["first_answer_s"] / r["bare_s"] for r in rounds]
    print(json.dumps({"cpu": cpu_model(), "cores": os.cpu_count(), "busy": args.busy, "measured_runtime": args.measure,
                      "rounds": rounds, "median_first_answer_s": round(statistics.median(r["first_answer_s"] for r in rounds), 1),
                      "median_bare_s": round(statistics.median(r["bare_s"] for r in rounds), 1),
                      "median_ratio": round(statistics.median(ratios), 2)}, indent=2))
    return 0


def _round(measure: bool) -> dict:
    home = Path(tempfile.mkdtemp(prefix="lectio-first-answer-"))
    home.chmod(0o755)
    corpus = Path(os.environ.get("LECTIO_CORPUS_DIR", PROJECT / ".lectio" / "corpus"))
    env = home_env(home, corpus, runtime_set=not measure)
    try:
        started = time.perf_counter()
        run = _timed(["lectio", "run", "--sources", str(SOURCES)], env)
        search = _timed(["lectio", "search", QUERY, "--json"], env)
        first_answer = time.perf_counter() - started
        texts = _indexed_texts(env, home)
        bare = _timed([sys.executable, "-c", BARE, str(texts), QUERY], env)
        return {"first_answer_s": round(first_answer, 1), "run_s": run, "search_s": search, "bare_s": bare}
    finally:
        subprocess.run(["lectio", "down"], env=env, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def _timed(command: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True, cwd=PROJECT)
    return round(time.perf_counter() - started, 1)


def _indexed_texts(env: dict, home: Path) -> Path:
    """Every chunk text of the live version, written to a file in the home for the bare baseline."""
    script = ("import json, sys\n"
              "from lectio.index import versions\n"
              "from lectio.index.database import ensure_database\n"
              "from lectio.settings import load_settings\n"
              "with ensure_database(load_settings()).connect() as conn:\n"
              "    frame = versions.version_chunks(conn, versions.live_version(conn))\n"
              "json.dump(frame['text'].tolist(), open(sys.argv[1], 'w'))\n")
    path = home / "texts.json"
    subprocess.run([sys.executable, "-c", script, str(path)], env=env, check=True, capture_output=True, cwd=PROJECT)
    return path


if __name__ == "__main__":
    raise SystemExit(main())
