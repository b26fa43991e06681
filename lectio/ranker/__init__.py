"""The learned ranker: gradient-boosted trees that order a search's first fused hits again by what
the retrievers already said of each one (lectio.ranker.features), trained on the dev parts of the
labelled query sets (lectio.training.ranker) and stored in the home (lectio.ranker.model)."""
