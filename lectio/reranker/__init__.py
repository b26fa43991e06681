"""Trained rerankers: loading, scoring and finding the models `lectio model train` stores."""
