"""Wall time of `lectio search` in a fresh process, against the imports a torch-bound search pays.

What a user waits for when they type one search: the process starting, lectio's imports, the
database opened, the query embedded and the search run. Timed in rounds that alternate with the
baseline, measured in the same run: a fresh `python -c "import torch, sentence_transformers"`,
the imports alone that a search on the torch runtime would add. Also reported: whether the search
process imported torch at all (it should not where this home measured ONNX as giving the index's
vectors; lectio.embedding.runtime_choice.query_runtime).

    LECTIO_HOME=/tmp/small lectio run --sources tests/fixtures/sources.yaml   # once
    LECTIO_HOME=/tmp/small python benchmarks/cli_search_wall.py [--rounds 7] [--query "peace with God"]

Prints JSON: p50 and max seconds of each, their ratio, the CPU model.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time

from lectio.embedding import numerics, onnx_runtime

PROBE = ("import sys; from cli import main; code = main(['search', {query!r}, '--json']); "
         "print('TORCH', 'torch' in sys.modules, file=sys.stderr); sys.exit(code)")


def wall(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--query", default="peace with God")
    args = parser.parse_args()
    lectio = shutil.which("lectio") or "lectio"
    search = [lectio, "search", args.query, "--json"]
    imports = [sys.executable, "-c", "import torch, sentence_transformers"]
    wall(search)  # the first search of a home may build its lexical mirror: not what is measured
    seconds: dict[str, list[float]] = {"search": [], "torch_imports": []}
    for round_ in range(args.rounds):
        pair = [("search", search), ("torch_imports", imports)]
        for name, command in (pair if round_ % 2 == 0 else pair[::-1]):
            seconds[name].append(round(wall(command), 3))
    probe = subprocess.run([sys.executable, "-c", PROBE.format(query=args.query)], capture_output=True, text=True)
    imported = [line for line in probe.stderr.splitlines() if line.startswith("TORCH ")]
    p50 = {name: statistics.median(times) for name, times in seconds.items()}
    print(json.dumps({
        "cpu": f"{numerics.cpu_model()}, {onnx_runtime.cores()} cores",
        "search_p50_s": round(p50["search"], 3), "search_max_s": max(seconds["search"]),
        "torch_imports_p50_s": round(p50["torch_imports"], 3),
        "search_vs_torch_imports": round(p50["search"] / p50["torch_imports"], 3),
        "search_imported_torch": imported[-1].split()[1] == "True" if imported else None,
        "bar_search_p50_le_2s": p50["search"] <= 2.0,
        "seconds_each_round": seconds,
    }, indent=2))


if __name__ == "__main__":
    main()
