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


def test_each_service_gets_only_the_credentials_it_needs():
    """No service logs in as the superuser; the UI and daemon reach only Dagster's storage, the
    search service only lectio's database (docker/roles.sql makes the roles)."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    urls = {name: {k: v for k, v in (service.get("environment") or {}).items() if "URL" in k and "postgres" in str(v)}
            for name, service in services.items() if name != "postgres"}
    for name, env in urls.items():
        for key, url in env.items():
            user = url.split("://", 1)[1].split(":", 1)[0]
            assert user in ("lectio", "dagster"), f"{name} connects as {user} ({key})"
    assert set(urls["webserver"]) == set(urls["daemon"]) == {"LECTIO_DAGSTER_URL"}
    assert set(urls["search"]) == {"DATABASE_URL"}
    postgres = services["postgres"]["environment"]
    assert postgres["POSTGRES_USER"] not in ("lectio", "dagster")
    assert any("roles.sql" in volume for volume in services["postgres"]["volumes"])
