"""The processes that mirror a step's output to the terminal are born with SIGINT blocked, so a
terminal's Ctrl-C is `lectio run`'s alone to act on (no KeyboardInterrupt traceback from them)."""

import os
import signal
import subprocess
import sys

import pytest

from pipelines.compute_logs import TerminalComputeLogManager, sigint_blocked


@pytest.fixture(autouse=True)
def sigterm_deliverable():
    """SIGTERM unblocked in this thread, as in a `lectio run` process, for the test's length: in
    full runs of the suite an earlier test leaves it blocked in the test process (not yet traced),
    every child inherits the block, and neither Dagster's tail nor these children end on SIGTERM."""
    previous = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    yield
    signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def blocked(pid: int) -> set[int]:
    line = next(line for line in open(f"/proc/{pid}/status") if line.startswith("SigBlk:"))
    mask = int(line.split()[1], 16)
    return {signum for signum in signal.Signals if mask >> (signum - 1) & 1}


def test_a_process_started_inside_keeps_sigint_blocked_and_this_thread_gets_it_back():
    before = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    with sigint_blocked():
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        assert signal.SIGINT in blocked(child.pid)
        assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == before
        child.send_signal(signal.SIGINT)  # a Ctrl-C: it waits, blocked, and the child lives on
        assert child.poll() is None
    finally:
        child.terminate()
        child.wait()
    assert child.returncode == -signal.SIGTERM  # Dagster ends its mirroring processes so


def test_the_mirroring_processes_of_a_step_leave_ctrl_c_to_this_process(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    manager = TerminalComputeLogManager.from_config_value(None, {})
    kept = manager.get_captured_local_path(["run", "step"], "out")
    assert kept.startswith(str(tmp_path / "storage"))  # where Dagster's own keeps them
    own = set(_children())
    with manager.capture_logs(["run", "step"]):
        mirroring = set(_children()) - own
        assert mirroring  # tail and its watcher
        assert all(signal.SIGINT in blocked(pid) for pid in mirroring)
    assert not set(_children()) & mirroring  # ended with the step


def _children() -> list[int]:
    pids = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as listed:
            pids += [int(pid) for pid in listed.read().split()]
    return pids
