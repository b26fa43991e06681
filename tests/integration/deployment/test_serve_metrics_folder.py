"""`lectio serve --workers N` leaves no metrics folder behind, `kill -9` of its supervisor included
(issue 63, item 15).

The workers add up their Prometheus series in a folder the supervisor makes in the temp directory
and removed only as it returned; killed with -9 it runs no code, and every such kill left one. Now
its workers, which the kill stops, remove it as they stop; and a start reaps any folder whose
supervisor is gone (the workers killed too), never a living one's."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

pytestmark = [pytest.mark.slow]

WAIT_SECONDS = 120  # a bound on waiting for processes, not a measurement


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def _until(what: str, ready, serve: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not ready():
        if serve is not None and serve.poll() is not None:
            pytest.fail(f"lectio serve ended before {what}: {serve.stdout.read()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {WAIT_SECONDS} s")
        time.sleep(0.2)


def _dead_pid() -> int:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    return ended.pid


def test_a_killed_supervisors_metrics_folder_is_removed_and_a_start_reaps_stale_ones(documents_home_factory, tmp_path):
    with documents_home_factory("lectio-serve-metrics-") as home:
        home.database  # started here: the workers find it running
        temp = tmp_path / "tmp"
        temp.mkdir()
        # One left by a start whose supervisor and workers were all killed, and one of a living process.
        stale = temp / f"lectio-metrics-{_dead_pid()}-left"
        living = temp / f"lectio-metrics-{os.getpid()}-living"
        for folder in (stale, living):
            folder.mkdir()
            (folder / "counter_1.db").write_bytes(b"\0" * 16)

        url = f"http://127.0.0.1:{(port := _free_port())}"
        serve = subprocess.Popen([sys.executable, "-m", "cli", "serve", "--port", str(port), "--workers", "2",
                                  "--pool", "1"], env={**os.environ, "TMPDIR": str(temp)},
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            _until("healthy service", lambda: _healthy(url), serve)
            _until("two workers", lambda: len(psutil.Process(serve.pid).children()) >= 2, serve)
            workers = psutil.Process(serve.pid).children()
            assert not stale.exists() and living.exists()
            (own,) = [p for p in temp.glob("lectio-metrics-*") if p != living]

            serve.kill()
            serve.wait()
            _until("end of the workers", lambda: not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE
                                                         for w in workers))
            assert not own.exists()
            assert [p.name for p in temp.glob("lectio-metrics-*")] == [living.name]
        finally:
            if serve.poll() is None:
                serve.kill()
            serve.wait()
