"""Cutting a source into chunks: one ruleset per content type, each versioned by its rules."""
