"""What a run may ask of the migration gate: the config of `index_evaluation` and `live_index`,
and the rule that a run launched from the UI may only narrow it.

docs/operations.md promised that a run's config may only narrow what it builds, yet the launchpad
took `tolerances: {}` (nothing guarded), `keep: 0`, query sets from any file on the host and any
version as the candidate, and the `lectio/embed_model` tag switched a model in under the looser
tolerances of a rule change. Every such launch is now refused at its first step, before anything
is built or scored, in one line naming the setting. The operator's own `lectio migrate` and
`lectio run` execute the gate in their process and say so here (`operators_settings`): their
flags are the deployment's, as the files and the home are (docs/operations.md says why).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

from dagster import AssetExecutionContext, Config, Failure

from assets.names import MODEL_TAG
from lectio.evaluation import migration_gate
from lectio.index import retention


class EvaluationConfig(Config):
    # Empty: the dev parts of the project's default sets (migration_gate.DEFAULT_QUERY_SETS). A
    # run may add the project's other sets (data/queries), never drop a default one.
    query_sets: list[str] = []
    k: int = migration_gate.DEFAULT_K
    mode: str = migration_gate.DEFAULT_MODE
    # The version to score beside the live one; empty: the version search_index built last, when
    # it is not live. A run may name only that version.
    candidate: str = ""


class GateConfig(Config):
    # Metric → largest drop allowed. None: the defaults (the stricter model tolerances when the
    # candidate embeds with another model). A run may tighten them, never loosen or drop one.
    tolerances: Optional[dict[str, float]] = None
    keep: int = retention.DEFAULT_KEEP


# Whether this process runs the gate for the operator (`lectio migrate`, `lectio run`), whose flags
# may loosen it. This process's own knowledge, never a run's config or tag (anyone who reaches
# the UI sets those), as locks._HELD_HERE is for the writer lock.
_OPERATOR: list[bool] = []


@contextmanager
def operators_settings() -> Iterator[None]:
    """The gate runs executed in this process meanwhile take their settings as the operator gave
    them (the CLI's flags), not held to the defaults."""
    _OPERATOR.append(True)
    try:
        yield
    finally:
        _OPERATOR.pop()


def from_operator() -> bool:
    return bool(_OPERATOR)


def tolerances_for(gate: GateConfig, model_change: bool) -> dict[str, float]:
    """The tolerances the gate applies: the run's where they only narrow the defaults (the
    operator's as given); a Failure naming the setting otherwise."""
    floor = migration_gate.tolerance_floor(model_change)
    if from_operator():
        return migration_gate.check_tolerances(floor if gate.tolerances is None else gate.tolerances)
    return _refused_unless("live_index", "tolerances", migration_gate.narrowed_tolerances, gate.tolerances, floor)


def query_sets_for(evaluation: EvaluationConfig) -> list[str]:
    """The query sets the evaluation scores: the run's where they are the project's."""
    if from_operator():
        return list(evaluation.query_sets or migration_gate.DEFAULT_QUERY_SETS)
    return _refused_unless("index_evaluation", "query_sets", migration_gate.narrowed_query_sets, evaluation.query_sets)


def keep_for(gate: GateConfig) -> int:
    """How many other versions retention keeps: the run's where it is at least the default."""
    if from_operator():
        return gate.keep
    return _refused_unless("live_index", "keep", migration_gate.narrowed_keep, gate.keep)


def refuse_loosening(context: AssetExecutionContext, built: str | None, model_change: bool) -> None:
    """Fails the run at its first step of the migration (search_index in migrate_index,
    index_evaluation in gate_candidate) when its config or tags would loosen the gate. `built`:
    the version search_index built (None: this run builds it); `model_change`: whether that
    version embeds with another model than the live one, as far as is known yet."""
    if from_operator():
        return
    ops = (context.run.run_config or {}).get("ops", {})
    evaluation = EvaluationConfig(**(ops.get("index_evaluation") or {}).get("config", {}))
    gate = GateConfig(**(ops.get("live_index") or {}).get("config", {}))
    query_sets_for(evaluation)
    _refused_unless("index_evaluation", "k, mode", migration_gate.narrowed_scoring, evaluation.k, evaluation.mode)
    if evaluation.candidate and evaluation.candidate != built:
        what = f"the version search_index built ({built})" if built else "the version this run builds"
        _refuse("index_evaluation", "candidate", f"{evaluation.candidate!r} is not {what}; a run gates only that")
    # A tagged run embeds with the tag's model: held to the model tolerances before it builds.
    tolerances_for(gate, model_change or MODEL_TAG in context.run.tags)
    keep_for(gate)


def _refused_unless(op: str, setting: str, check, *args):
    try:
        return check(*args)
    except ValueError as exc:
        problem = str(exc)
    _refuse(op, setting, problem)


def _refuse(op: str, setting: str, problem: str) -> None:
    raise Failure(f"refused: run config ops.{op}.config.{setting}: {problem}", allow_retries=False)
