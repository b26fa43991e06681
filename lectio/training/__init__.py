"""Learning from the corpus: training pairs from its structure, and the models trained on them."""
