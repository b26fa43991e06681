"""Where lectio keeps its state.

Everything a run writes (database files, Dagster home, downloaded corpus, caches) lives under
LECTIO_HOME, so two homes never see each other's state and a test can use a throwaway one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCES = PROJECT_ROOT / "data" / "sources.yaml"
# Where a home records the sources file its last run was given.
REMEMBERED_SOURCES = "sources-file"


@dataclass(frozen=True)
class AlertSettings:
    """Alert channels (lectio.alerts); a channel is on when its address is set."""

    webhook_url: str | None = None
    smtp_host: str | None = None
    smtp_port: int = 25
    smtp_user: str | None = None
    smtp_password: str | None = None
    smtp_starttls: bool = False
    email_from: str = "lectio@localhost"
    email_to: tuple[str, ...] = ()
    log_file: Path | None = None  # None: off


def _alert_settings(home: Path) -> AlertSettings:
    env = os.environ.get
    log_file = env("LECTIO_ALERT_LOG", str(home / "alerts.jsonl"))
    return AlertSettings(
        webhook_url=env("LECTIO_ALERT_WEBHOOK_URL") or None,
        smtp_host=env("LECTIO_ALERT_SMTP_HOST") or None,
        smtp_port=int(env("LECTIO_ALERT_SMTP_PORT") or 25),
        smtp_user=env("LECTIO_ALERT_SMTP_USER") or None,
        smtp_password=env("LECTIO_ALERT_SMTP_PASSWORD") or None,
        smtp_starttls=(env("LECTIO_ALERT_SMTP_STARTTLS") or "").lower() in ("1", "true", "yes"),
        email_from=env("LECTIO_ALERT_EMAIL_FROM") or "lectio@localhost",
        email_to=tuple(a.strip() for a in (env("LECTIO_ALERT_EMAIL_TO") or "").split(",") if a.strip()),
        # An empty LECTIO_ALERT_LOG turns the log file off.
        log_file=Path(log_file).expanduser().resolve() if log_file else None,
    )


@dataclass(frozen=True)
class AuthSettings:
    """How `lectio serve` checks the JWTs callers send (lectio.serving.auth)."""

    secret: str | None = None  # LECTIO_AUTH_SECRET: HS256
    public_key: str | None = None  # LECTIO_AUTH_PUBLIC_KEY: RS256, a PEM or a path to one
    # When set, a token must name this issuer (`iss`) and this audience (`aud`): a key shared by
    # several services, or an identity provider that signs for many, does not make a token
    # meant for another of them good here.
    issuer: str | None = None  # LECTIO_AUTH_ISSUER
    audience: str | None = None  # LECTIO_AUTH_AUDIENCE


def auth_settings() -> AuthSettings:
    env = os.environ.get
    public_key = env("LECTIO_AUTH_PUBLIC_KEY") or None
    if public_key and not public_key.lstrip().startswith("-----BEGIN") and Path(public_key).is_file():
        public_key = Path(public_key).read_text()
    return AuthSettings(secret=env("LECTIO_AUTH_SECRET") or None, public_key=public_key,
                        issuer=env("LECTIO_AUTH_ISSUER") or None, audience=env("LECTIO_AUTH_AUDIENCE") or None)


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str | None  # an external server; None means the embedded one under home
    dagster_database_url: str | None
    corpus_dir: Path
    sources_file: Path
    # Where the Dagster UI is reached, for links in alerts.
    ui_url: str = "http://localhost:3000"
    alerts: AlertSettings = field(default_factory=AlertSettings)

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    @property
    def storage_dir(self) -> Path:
        """Where Dagster's IO manager keeps asset outputs."""
        return self.home / "storage"


def _remembered_sources(home: Path) -> str | None:
    path = home / REMEMBERED_SOURCES
    return path.read_text().strip() or None if path.is_file() else None


def remember_sources(settings: Settings) -> None:
    """A home built from a sources file keeps using it (`lectio dev`, `lectio migrate`, searches
    judging a version's ACLs) until another is given with --sources or LECTIO_SOURCES."""
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / REMEMBERED_SOURCES).write_text(f"{settings.sources_file}\n")


def secure_home(settings: Settings) -> None:
    """The home and the folders that hold text (Dagster's stored outputs: private notes among
    them; Dagster's logs) closed to other local users. The home itself keeps its search bit for
    others: the embedded server runs as a system user of its own and must reach its data."""
    settings.home.mkdir(parents=True, exist_ok=True)
    settings.home.chmod(0o711)
    for private in (settings.storage_dir, settings.dagster_home):
        private.mkdir(parents=True, exist_ok=True)
        private.chmod(0o700)


@dataclass(frozen=True)
class RuntimeSettings:
    """What the environment tells this process beyond where its state is: the home alone, and
    the choices a user may force over what lectio measures or derives. Read from the environment
    here only, cheaply (no file is read), so code on a search's path may ask for them; each is
    checked where its meaning is."""

    home: Path
    embed_model: str | None  # LECTIO_EMBED_MODEL: a packaged or adapted model over the home's choice
    embed_precision: str | None  # LECTIO_EMBED_PRECISION: numerics over the machine's measurement
    embed_backend: str | None  # LECTIO_EMBED_BACKEND: the runtime over the machine's measurement
    reader_url: str | None  # LECTIO_READER_URL: the reader role's URL on an external server
    token_max_seconds: str  # LECTIO_TOKEN_MAX_SECONDS: the longest lifetime `lectio token` signs


def runtime_settings() -> RuntimeSettings:
    env = os.environ.get
    return RuntimeSettings(
        home=_home(),
        embed_model=(env("LECTIO_EMBED_MODEL") or "").strip() or None,
        embed_precision=(env("LECTIO_EMBED_PRECISION") or "").strip().lower() or None,
        embed_backend=env("LECTIO_EMBED_BACKEND"),
        reader_url=env("LECTIO_READER_URL") or None,
        token_max_seconds=env("LECTIO_TOKEN_MAX_SECONDS") or "3600",
    )


def _home() -> Path:
    return Path(os.environ.get("LECTIO_HOME", ".lectio")).expanduser().resolve()


def load_settings() -> Settings:
    home = _home()
    # The corpus is large and identical for every home, so tests may share one download.
    corpus = os.environ.get("LECTIO_CORPUS_DIR")
    return Settings(
        home=home,
        database_url=os.environ.get("DATABASE_URL") or None,
        dagster_database_url=os.environ.get("DAGSTER_DATABASE_URL") or None,
        corpus_dir=Path(corpus).expanduser().resolve() if corpus else home / "corpus",
        sources_file=Path(os.environ.get("LECTIO_SOURCES") or _remembered_sources(home) or DEFAULT_SOURCES)
        .expanduser().resolve(),
        ui_url=(os.environ.get("LECTIO_UI_URL") or "http://localhost:3000").rstrip("/"),
        alerts=_alert_settings(home),
    )
