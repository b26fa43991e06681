"""What observing `source_inputs` records, made by those who fingerprint the sources themselves
(the source_changes sensor, `lectio run`) rather than through the asset's own Observe."""

from __future__ import annotations

from dagster import AssetObservation

from assets.source_assets import SOURCE_INPUTS
from pipelines.dagster_internals import DATA_VERSION_TAG


def source_observations(prints: dict[str, str | None]) -> list[AssetObservation]:
    """One data version per source whose data is here."""
    return [AssetObservation(SOURCE_INPUTS, partition=k, tags={DATA_VERSION_TAG: v}) for k, v in prints.items() if v]
