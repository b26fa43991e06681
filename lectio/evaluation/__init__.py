"""Measuring retrieval: labelled query sets, their metrics, built-in baselines and the migration
gate that decides whether a candidate version may go live."""
