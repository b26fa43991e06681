"""Texts and rounds for measuring the embedding runtimes of a machine.

A decision that becomes part of an index's model id must not follow a shared machine's noise: it
is measured on a few hundred real texts in the corpus's length mix (short verses and answers,
paragraphs, chunks that fill the model's window), each runtime timed in every round with the
order turned round from one round to the next. A machine in use is the normal case, so what is
compared is each round's ratio between two runtimes, timed back to back: load that lasts slows
both sides of a pair alike, and a burst that falls on one side spoils one round, which the
interval for the ratios' median (distribution-free, by the sign test) leaves out once there are
rounds enough. The rounds' spread and the CPU time other processes took meanwhile are kept as the
evidence of how quiet the machine was.
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import math
import os
import random
import time
from pathlib import Path
from typing import Callable

# Word counts of the texts measured: the corpus's mix of verse-sized, paragraph-sized and
# window-filling chunks (most ingest time goes to the long ones).
LENGTH_MIX = ((0.40, 12, 40), (0.35, 60, 140), (0.25, 160, 230))
TEXTS = 256
# Each round times one batch of TIMED_TEXTS (the runtimes' own batch size), the next of the TEXTS,
# so more paired rounds fit in the same minutes; the first pass over the TEXTS also gives the
# vectors each runtime's equivalence is judged on (lectio.embedding.backends.measure). Under steady
# load a decision may take all MAX_ROUNDS: about two minutes beside a busy core. Measured beside
# other work (AMD EPYC with avx512_bf16): bf16 over ONNX fp32 1.32x on 64 texts, 1.25x on 128,
# 1.23x on 256.
TIMED_TEXTS = 64
QUERIES = 48
# A runtime's rounds may differ by this much (slowest over fastest, less one) on a quiet machine.
QUIET_SPREAD = 0.15
# Five rounds are the fewest whose sign-test interval reaches CONFIDENCE; eleven leave two bursts out.
MIN_ROUNDS, MAX_ROUNDS = 5, 11
CONFIDENCE = 0.9
# The share of every core's time that other processes may take during the rounds of a quiet
# machine. Measured here: an HNSW build at `nice -n 19` beside the rounds made every runtime 4-5x
# slower while the rounds still agreed within 3-6 %.
OTHERS_SHARE = 0.2

log = logging.getLogger(__name__)


def _prose() -> list[str]:
    """The Westminster Standards' text as shipped in a package lectio depends on: real prose of
    the kind lectio indexes, present on every install before any corpus is fetched."""
    path = importlib.resources.files("westminster_cli") / "data" / "standards.json"
    documents = json.loads(path.read_text(encoding="utf-8"))["documents"]
    return [" ".join(str(entry.get(field) or "") for field in ("question", "answer", "text")).strip()
            for document in documents for entry in document["entries"]]


def texts(count: int = TEXTS, seed: int = 7) -> list[str]:
    """`count` spans of real prose with the corpus's length mix, the same every time."""
    words = " ".join(_prose()).split()
    pick = random.Random(seed)
    found = []
    for share, low, high in LENGTH_MIX:
        for _ in range(round(count * share)):
            size = pick.randint(low, high)
            start = pick.randrange(0, len(words) - size)
            found.append(" ".join(words[start:start + size]))
    return found[:count]


def queries(count: int = QUERIES, seed: int = 11) -> list[str]:
    """Query-sized spans (two to twelve words) of the same prose."""
    words = " ".join(_prose()).split()
    pick = random.Random(seed)
    spans = []
    for _ in range(count):
        size = pick.randint(2, 12)
        start = pick.randrange(0, len(words) - size)
        spans.append(" ".join(words[start:start + size]))
    return spans


def spread(seconds: list[float]) -> float:
    return max(seconds) / min(seconds) - 1


def median_interval(values: list[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """An interval holding the median of what `values` sample with at least `confidence`, whatever
    their distribution (the sign test): the k-th smallest and k-th largest value, k as large as
    that allows; None where there are too few values for any."""
    n, ordered = len(values), sorted(values)
    k = 0
    while k < n // 2 and 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n >= confidence:
        k += 1
    return (ordered[k - 1], ordered[n - k]) if k else None


def rounds(runs: dict[str, Callable[[], object]],
           settled: Callable[[dict[str, list[float]]], bool] | None = None) -> tuple[dict[str, list[float]], bool]:
    """Each run timed once per round, the order reversed every other round, until `settled` says
    the seconds decide what they are for (by default: every run's spread is within QUIET_SPREAD),
    after at least MIN_ROUNDS, or MAX_ROUNDS have passed; the seconds, and whether the machine was
    quiet enough."""
    settled = settled or quiet
    names = list(runs)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    others = Others()
    for round_ in range(MAX_ROUNDS):
        for name in (names if round_ % 2 == 0 else names[::-1]):
            started = time.perf_counter()
            runs[name]()
            seconds[name].append(round(time.perf_counter() - started, 4))
        if round_ + 1 >= MIN_ROUNDS and settled(seconds):
            break
    return seconds, quiet(seconds) and others.left_the_cores()


def quiet(seconds: dict[str, list[float]]) -> bool:
    return all(spread(s) <= QUIET_SPREAD for s in seconds.values())


class Others:
    """The CPU time every other process took from the moment this is made: the machine's busy
    time (/proc/stat, time stolen by the hypervisor included) less this process's own."""

    def __init__(self):
        self.wall, self.own, self.busy = time.perf_counter(), time.process_time(), busy_seconds()

    def share(self) -> float | None:
        """Their time as a share of every core's time since; None where /proc/stat is not there."""
        busy = busy_seconds()
        if busy is None or self.busy is None:
            return None
        wall = time.perf_counter() - self.wall
        theirs = (busy - self.busy) - (time.process_time() - self.own)
        return max(theirs, 0.0) / (wall * (os.cpu_count() or 1)) if wall > 0 else 0.0

    def left_the_cores(self) -> bool:
        share = self.share()
        if share is not None and share > OTHERS_SHARE:
            log.info("other processes took %.0f%% of the cores during the rounds: not quiet", share * 100)
            return False
        return True


def busy_seconds(stat: Path = Path("/proc/stat")) -> float | None:
    """Seconds every core of the machine has spent busy since boot (Linux), or None."""
    try:
        fields = [int(v) for v in stat.read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
