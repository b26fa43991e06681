"""Where lectio keeps its state, and what a home remembers."""

from __future__ import annotations

from lectio.settings import DEFAULT_SOURCES, load_settings, remember_sources, secure_home


def test_a_home_remembers_the_sources_file_it_was_built_from(tmp_path, monkeypatch):
    monkeypatch.setenv("LECTIO_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LECTIO_SOURCES", raising=False)
    assert load_settings().sources_file == DEFAULT_SOURCES.resolve()
    quick = tmp_path / "quick.yaml"
    quick.write_text("sources: []\n")
    monkeypatch.setenv("LECTIO_SOURCES", str(quick))
    remember_sources(load_settings())
    monkeypatch.delenv("LECTIO_SOURCES")
    assert load_settings().sources_file == quick.resolve()  # `lectio dev` keeps the quick try's file
    other = tmp_path / "other.yaml"
    monkeypatch.setenv("LECTIO_SOURCES", str(other))
    assert load_settings().sources_file == other.resolve()  # an explicit file still wins


def test_the_home_keeps_stored_text_from_other_users(tmp_path, monkeypatch):
    monkeypatch.setenv("LECTIO_HOME", str(tmp_path / "home"))
    settings = load_settings()
    secure_home(settings)
    assert settings.home.stat().st_mode & 0o777 == 0o711
    assert settings.storage_dir.stat().st_mode & 0o777 == 0o700
    assert settings.dagster_home.stat().st_mode & 0o777 == 0o700


def test_alert_links_point_at_the_port_lectio_dev_serves(monkeypatch):
    from lectio.alerts import run_url
    from lectio.settings import load_settings
    from cli.dev import ui_url_env

    env = ui_url_env({"PATH": "/bin"}, 3300)
    monkeypatch.setenv("LECTIO_UI_URL", env["LECTIO_UI_URL"])
    assert run_url(load_settings().ui_url, "r1") == "http://127.0.0.1:3300/runs/r1"
    # Where the team reaches the UI elsewhere, its own URL stands.
    assert ui_url_env({"LECTIO_UI_URL": "https://dagster.example"}, 3300)["LECTIO_UI_URL"] == "https://dagster.example"
