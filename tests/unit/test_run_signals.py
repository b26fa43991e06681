"""`lectio run` stops on SIGINT or SIGTERM even where the handler that took the signal lost it:
during a run Dagster's handler raises inside the step's code, where any bare `except:` can
swallow it, leaving the run to succeed and the job to go on."""

import os
import signal

from pipelines import runners


def test_a_signal_another_handler_swallowed_still_stops_the_job():
    with runners._stop_on_signals() as stopped:
        assert not stopped()
        # What a run's handler does when its exception is swallowed: nothing comes of it.
        outer = signal.signal(signal.SIGINT, lambda *_: None)
        try:
            os.kill(os.getpid(), signal.SIGINT)
        finally:
            signal.signal(signal.SIGINT, outer)
        assert stopped()
        assert stopped()  # it stays seen


def test_between_runs_the_signal_stops_at_once_and_the_old_handlers_return():
    before = signal.getsignal(signal.SIGTERM), signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(before[1])
    try:
        with runners._stop_on_signals():
            os.kill(os.getpid(), signal.SIGTERM)
    except runners.Interrupted as stop:
        assert "SIGTERM" in str(stop)
    else:
        raise AssertionError("SIGTERM did not stop the job")
    assert signal.getsignal(signal.SIGTERM) == before[0]
    assert signal.set_wakeup_fd(-1) == before[1]
    signal.set_wakeup_fd(before[1])
