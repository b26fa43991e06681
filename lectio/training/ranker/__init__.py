"""The learned ranker's wing: its training on the labelled query sets' dev parts (trainer) and its
gate (gate) side by side. The features and trees the search's learned-rank stage reads, and their
registry, sit below the search, in lectio.ranker."""
