"""The runtime a home chooses on a machine in use. Measured beside a process that keeps a core busy
and another that comes and goes in bursts, as a user's machine runs, the choice is the runtime
that longer paired rounds under the same load show faster, wherever they show it clearly."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from pathlib import Path

from lectio.embedding import backends, comparison, measurement
from lectio.embedding.model import ModelChoice

pytestmark = [pytest.mark.slow]

STEADY = "while True: pass"
BURSTS = ("import time\n"
          "while True:\n"
          "    end = time.time() + 1.3\n"
          "    while time.time() < end: pass\n"
          "    time.sleep(0.9)")


def _beside(*programs: str) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", program]) for program in programs]


def _paired(runs: dict, texts: list[str], rounds: int) -> dict[str, list[float]]:
    seconds = {name: [] for name in runs}
    for round_ in range(rounds):
        for name in (list(runs) if round_ % 2 == 0 else list(runs)[::-1]):
            started = time.perf_counter()
            runs[name](texts)
            seconds[name].append(time.perf_counter() - started)
    return seconds


# Texts per round, the measurement's and the truth's alike: half a runtime's batch keeps the rounds'
# comparison (both sides time the same batches) at half the suite's minutes.
SAMPLE = 32


def test_beside_steady_and_bursty_load_the_paired_rounds_choose_the_faster_close_runtime(tmp_path):
    pool = backends.candidates(None, None)
    first, other = pool[0], pool[-1]  # the preferred runtime, and the one that must beat it
    choice, home = ModelChoice(), tmp_path / "home"
    load = _beside(STEADY, BURSTS)
    try:
        time.sleep(0.5)  # the load is running before the rounds start
        record = measurement.measure(choice.name, choice.release, [first, other], home, sample=SAMPLE)
        # The truth to judge it by: as many rounds as the measurement may take at most, under the same load.
        runs = {backends.key(r): measurement._runner(choice.name, choice.release, r, Path(home))[0] for r in (first, other)}
        truth = _paired(runs, measurement.texts(SAMPLE), measurement.MAX_ROUNDS)
    finally:
        for process in load:
            process.kill()
            process.wait()
    seconds = {k: found["seconds"] for k, found in record["candidates"].items() if "seconds" in found}
    assert len(seconds) == 2 and all(len(s) >= measurement.MIN_ROUNDS for s in seconds.values())
    # The choice is what its own rounds say, and they said it as soon as they could.
    gains = comparison.ratios(seconds, other, first)
    assert (record["ingest"] == other) == comparison.faster(gains), (record["ingest"], gains)
    assert comparison.decided(seconds) or len(gains) == measurement.MAX_ROUNDS
    # And it is right wherever the longer rounds are clear: faster by TIE beyond their interval, or
    # surely not faster by TIE.
    truly = comparison.ratios(truth, other, first)
    low, high = comparison.median_interval(truly)
    if low > comparison.TIE:
        assert record["ingest"] == other, (gains, truly)
    if high < comparison.TIE:
        assert record["ingest"] == first, (gains, truly)
