"""The HTTP search service: principals from verified tokens, a pool that survives restarts."""
