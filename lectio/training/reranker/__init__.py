"""The reranker's wing: its training (trainer) and its gate (gate) side by side. The model itself,
which the search's rerank stage loads and scores, and its registry sit below the search, in
lectio.reranker.model."""
