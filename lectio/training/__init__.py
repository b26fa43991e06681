"""Learning from the corpus: training pairs from its structure, and the models trained on them.

What every trained model shares lives here: the pairs (pairs, store), the leakage guard (guard),
the training loop (loop), the gate's verdict (gate) and the steps the command and the assets run
(workflow). Each trained model has a wing of its own beside them, its training and its gate or
registry side by side: reranker, ranker (the learned ranker) and embedder (the adapted embedder).
What a search loads and scores of a model sits below the search (lectio.reranker, lectio.ranker,
lectio.embedding), as their registries do (lectio.registry)."""
