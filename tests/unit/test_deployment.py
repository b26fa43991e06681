"""The deployment files: nothing unauthenticated published beyond loopback, no secret or local
environment in the image, no container running as root."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_compose_publishes_nothing_beyond_loopback():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    published = [(name, str(port)) for name, service in services.items() for port in service.get("ports", [])]
    assert published, "the compose file publishes the UI and the search service"
    for name, port in published:
        assert port.startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"


def test_the_image_runs_as_a_user_who_is_not_root():
    users = [line.split()[1] for line in (ROOT / "Dockerfile").read_text().splitlines()
             if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")


def test_secrets_and_local_environments_stay_out_of_the_image():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".env", ".venv"} <= ignored
