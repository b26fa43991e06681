"""Data-quality checks over chunks, vectors and index versions, and admission to an index."""
