"""The ranking stages in the order they run, and the search settings they own.

Adding a stage is its module (a class that keeps to lectio.retrieval.stage.Stage and declares its
settings) and one line in PIPELINE: the settings appear under `stages.` in every SearchConfig,
`lectio eval --set` and `lectio search --set` take them, and lectio.retrieval.stages runs the
stage wherever its settings turn it on, for its modes."""

from __future__ import annotations

from dataclasses import make_dataclass

from lectio.retrieval.collapse import CollapseCovered
from lectio.retrieval.learned_rank import LearnedRank
from lectio.retrieval.long_passages import LongPassageParts, PackPage
from lectio.retrieval.mmr import Mmr
from lectio.retrieval.query_share import QueryShare
from lectio.retrieval.reranking import Rerank
from lectio.retrieval.spread import SpreadSources
from lectio.retrieval.stage import Setting, Truncate

# The order the stages run in. The learned ranker reads the fused order and what each retriever said
# of each hit, before any stage moves them; the trained reranker reads its order, and every stage
# after it shapes the page it chose. Parts take a long passage's place before collapsing could drop
# them as covered; spreading and MMR see the collapsed list; the page is packed from the k kept.
PIPELINE = (LearnedRank, Rerank, QueryShare, LongPassageParts, CollapseCovered, SpreadSources, Mmr, Truncate, PackPage)

# The settings that name a trained model: where one says "active", the searched version's record
# says which (index_versions.rankers, written by the gate), so a rollback or a candidate is searched
# with the models it was judged with, and no search reads a file of the home to know.
CHOSEN_BY_VERSION = tuple(f"stages.{stage.trained}" for stage in PIPELINE if getattr(stage, "trained", None))

# Not a stage's: the search replaces child hits by their parent chunk, collapsing duplicates,
# before the stages see them.
_PARENTS = Setting("return_parents", "bool", False)


def _declared() -> dict[str, Setting]:
    """Every stage's settings by name, in PIPELINE's order (stages that share a group, such as
    the two long-passage stages, declare it alike and it appears once)."""
    found: dict[str, Setting] = {}
    for stage in PIPELINE:
        for setting in stage.settings:
            if found.setdefault(setting.name, setting) != setting:
                raise TypeError(f"two stages declare the setting stages.{setting.name} differently")
    return {**found, _PARENTS.name: _PARENTS}


_DECLARED = _declared()
# The search setting `stages`: one field per declared setting, frozen like every settings group.
StageSettings = make_dataclass(
    "StageSettings", [(s.name, s.annotation, s.field()) for s in _DECLARED.values()], frozen=True,
    namespace={"__doc__": "The stages the fused hits pass through (PIPELINE), each one's settings under its name."})
StageSettings.__module__ = __name__
# The settings groups the stages own, by name: how the settings' paths are walked.
GROUPS = {s.kind.__name__: s.kind for s in _DECLARED.values() if isinstance(s.kind, type)}
