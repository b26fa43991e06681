"""Searching an index version: references, word studies and ranked retrieval fused from several
retrievers, all read as the caller under row-level security."""
