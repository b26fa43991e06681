"""Step output mirrored to the terminal, without a traceback when Ctrl-C stops `lectio run`.

To mirror a step's stdout and stderr to the terminal, Dagster's local compute log manager starts
`tail` and a small Python watcher beside every step. A terminal's Ctrl-C reaches every process of
its group, and the watcher died of it with a KeyboardInterrupt traceback printed around the
command's own one line. Here both are started with SIGINT blocked, which a child inherits: the
Ctrl-C is this process's to act on (pipelines.runners), Dagster still ends both when the step
ends, and the watcher still ends the tail if this process dies."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager

from dagster import Field, StringSource

from pipelines.dagster_internals import LocalComputeLogManager


class TerminalComputeLogManager(LocalComputeLogManager):
    """LocalComputeLogManager whose mirroring processes leave Ctrl-C to this one. Its `base_dir`
    defaults to where Dagster's own keeps the logs, `$DAGSTER_HOME/storage`."""

    @classmethod
    def config_type(cls):
        return {"base_dir": Field(StringSource, is_required=False),
                "polling_timeout": Field(float, is_required=False)}

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> TerminalComputeLogManager:
        base_dir = config_value.get("base_dir") or os.path.join(os.environ["DAGSTER_HOME"], "storage")
        return cls(inst_data=inst_data, **{**config_value, "base_dir": base_dir})

    @contextmanager
    def capture_logs(self, log_key: Sequence[str]) -> Iterator:
        with ExitStack() as stack:
            with sigint_blocked():  # the mirroring processes start here, and keep the mask
                captured = stack.enter_context(super().capture_logs(log_key))
            yield captured


@contextmanager
def sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread, so that processes started meanwhile are born with it blocked;
    a SIGINT that comes meanwhile is delivered as the block ends."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
