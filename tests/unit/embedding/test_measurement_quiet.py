"""A machine whose cores another process keeps busy is not quiet, however well the rounds agree."""

import subprocess
import sys
import time

from lectio.embedding import measurement


def _work():
    sum(i * i for i in range(1_000_000))


def test_rounds_beside_a_busy_process_on_every_core_are_not_quiet():
    # At the lowest priority, as a background build runs: the rounds keep their pace and agree,
    # while the cores they do not use are not free.
    spin = "import os; os.nice(19)\nwhile True: pass"
    busy = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(measurement.os.cpu_count() or 1)]
    try:
        time.sleep(0.5)  # they are running before the rounds start
        seconds, quiet = measurement.rounds({"a": _work, "b": _work})
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert all(len(times) >= measurement.MIN_ROUNDS for times in seconds.values())
    assert not quiet


def test_others_share_counts_their_time_not_this_process():
    others = measurement.Others()
    started = time.perf_counter()
    while time.perf_counter() - started < 0.3:  # this process's own work is not the others'
        _work()
    share = others.share()
    assert share is not None and 0.0 <= share <= 1.0


def test_busy_seconds_reads_the_cpu_line(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 20 30 1000 5 1 2 7 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    assert measurement.busy_seconds(stat) == (100 + 20 + 30 + 1 + 2 + 7) / measurement.os.sysconf("SC_CLK_TCK")
    assert measurement.busy_seconds(tmp_path / "absent") is None


def test_a_machine_that_was_not_quiet_keeps_one_query_thread_without_measuring():
    # A model that does not exist: measuring the threads would fail on it, so none is measured.
    found = measurement._query_threads({}, "fp32", False, ("no-such-model", "0", None), [])
    assert found == {"threads": 1, "spin": False}
