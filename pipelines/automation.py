"""Schedules and sensors: nightly re-embed, source changes, alerts (issue 5). Empty until built."""


def build_schedules(jobs: dict) -> list:
    return []


def build_sensors(jobs: dict) -> list:
    return []
