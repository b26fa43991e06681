"""great-expectations as lectio's checks use it: one ephemeral context per process, a frame
validated against a list of expectations, and the failing rows' ids read back."""

from __future__ import annotations

import logging
import math
import os
from functools import lru_cache
from typing import Any

import pandas as pd

from lectio.quality.results import EXAMPLES

# great-expectations logs at INFO from the moment it is imported ("Created temporary directory
# … for ephemeral docs site", one line per registered function); `lectio run` would print them
# between its own progress lines.
logging.getLogger("great_expectations").setLevel(logging.WARNING)


@lru_cache(maxsize=1)
def _gx_batch_definition():
    """One ephemeral context per process: importing great-expectations takes seconds, a context
    and a whole-dataframe batch definition are reused for every frame validated here."""
    # No usage statistics (nothing is reachable from a build machine anyway) and no progress
    # bars: GE draws them on stderr for every validation, which floods Dagster's captured logs.
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # That module sets its own logger to INFO when imported, whatever its parent says.
    logging.getLogger("great_expectations.data_context.types.base").setLevel(logging.WARNING)

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    asset = context.data_sources.add_pandas("lectio_quality").add_dataframe_asset("chunks")
    return asset.add_batch_definition_whole_dataframe("whole")


def expect(frame: pd.DataFrame, expectations: list, ids: str = "chunk_id") -> list[dict[str, Any]]:
    """Validate `frame` against great-expectations `expectations`; per expectation its type,
    column, success, unexpected count, partial unexpected list and the failing rows' ids."""
    import great_expectations as gx

    if frame.empty:
        return [{"expectation": e.expectation_type, "column": getattr(e, "column", None), "success": True,
                 "unexpected_count": 0, "partial_unexpected_list": [], "failing_ids": []} for e in expectations]
    frame = frame.reset_index(drop=True)
    suite = gx.ExpectationSuite(name="lectio", expectations=expectations)
    batch = _gx_batch_definition().get_batch(batch_parameters={"dataframe": frame})
    validation = batch.validate(suite, result_format={"result_format": "COMPLETE"})
    outcomes = []
    for r in validation.results:
        index = r.result.get("unexpected_index_list") or []
        outcomes.append(
            {
                "expectation": r.expectation_config.type,
                "column": r.expectation_config.kwargs.get("column"),
                "success": bool(r.success),
                "unexpected_count": int(r.result.get("unexpected_count") or 0),
                "partial_unexpected_list": [_plain(v) for v in (r.result.get("partial_unexpected_list") or [])][:EXAMPLES],
                "failing_ids": frame.loc[list(index), ids].tolist() if index else [],
            }
        )
    return outcomes


def _plain(value):
    # GE hands back numpy scalars and NaN; metadata must be JSON.
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def failing_ids(outcomes: list[dict], expectation: str, column: str | None = None) -> list[str]:
    return [i for o in outcomes if o["expectation"] == expectation and (column is None or o["column"] == column)
            for i in o["failing_ids"]]


def summaries(outcomes: list[dict]) -> list[dict]:
    return [{k: v for k, v in o.items() if k != "failing_ids"} for o in outcomes]
