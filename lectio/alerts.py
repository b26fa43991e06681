"""Alerts to the team: what failed, where, and a link to the run; sent once per failure.

Channels are configured by environment (lectio.settings.AlertSettings): a webhook (JSON with a
Slack-compatible `text` and `blocks`), e-mail over SMTP, and a JSONL log file under LECTIO_HOME.

Each (failure, channel) pair is sent at most once. The record of what was sent lives in lectio's
PostgreSQL (`alert_deliveries`), not in a sensor cursor, because:
- a cursor is saved only when a sensor tick completes: a tick that sent its e-mails and then
  died (daemon restart, tick timeout behind a slow SMTP server) would send them all again;
- Dagster owns the cursor of a run-failure sensor, so there is nowhere to keep fingerprints;
- the claim is one INSERT … ON CONFLICT DO NOTHING, so two evaluations at once (the daemon and
  a test tick from the UI) cannot both send, and resetting a sensor's cursor does not re-spam.
A channel that fails gives its claim back (logged), so re-raising the same alert later reaches
that channel without repeating the others.
"""

from __future__ import annotations

import email.policy
import hashlib
import json
import logging
import re
import smtplib
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from email.message import EmailMessage
from pathlib import Path
from typing import Iterable, Protocol

import psycopg

from lectio.settings import Settings

log = logging.getLogger(__name__)

DELIVERIES_DDL = """
CREATE TABLE IF NOT EXISTS alert_deliveries (
    fingerprint text NOT NULL,
    channel text NOT NULL,
    sent_at timestamptz NOT NULL DEFAULT now(),
    alert jsonb NOT NULL,
    PRIMARY KEY (fingerprint, channel)
)
"""


@dataclass(frozen=True)
class Alert:
    kind: str  # "check_failed" or "run_failed"
    message: str
    run_id: str | None = None
    run_url: str | None = None
    asset: str | None = None
    check: str | None = None
    partition: str | None = None  # the source id, for per-source assets
    job: str | None = None
    details: dict = field(default_factory=dict)
    # For a standing condition found again by every run (the sources an index build cannot index
    # from their current files): the condition itself. Sent once while it holds, not once per run
    # that finds it; `cleared` forgets it, so its return is sent again.
    state: str | None = None

    @property
    def fingerprint(self) -> str:
        # Not the message: the same failure re-evaluated may word itself differently (counts,
        # timings), and must still count as already sent.
        occasion = self.run_id if self.state is None else f"state:{self.state}"
        key = "|".join(str(x or "") for x in (self.kind, self.job, self.asset, self.check, self.partition, occasion))
        return hashlib.sha256(key.encode()).hexdigest()[:32]

    @property
    def title(self) -> str:
        where = f" for source {self.partition}" if self.partition else ""
        if self.kind == "check_failed":
            return f"lectio: check {self.check} failed on {self.asset}{where}"
        what = f"job {self.job}" if self.job else "a run"
        return f"lectio: {what} failed{where}" + (f" at {self.asset}" if self.asset else "")

    @property
    def subject(self) -> str:
        """What was alerted, in a line an operator can search the UI by: the check or failing
        step, the source and the run ("chunk_count on notes-alice, run 3f2a9c1d")."""
        what = self.check or self.asset or (f"job {self.job}" if self.job else "a run")
        where = f" on {self.partition}" if self.partition else ""
        return f"{what}{where}" + (f", run {self.run_id[:8]}" if self.run_id else "")

    def text(self) -> str:
        lines = [self.title, self.message]
        if self.run_url:
            lines.append(f"Run: {self.run_url}")
        return "\n".join(line for line in lines if line)

    def to_json(self) -> dict:
        return {**asdict(self), "title": self.title, "fingerprint": self.fingerprint}


def run_url(ui_url: str, run_id: str) -> str:
    return f"{ui_url.rstrip('/')}/runs/{run_id}"


class Channel(Protocol):
    name: str

    def where(self) -> str: ...  # where it delivers, in words a description can show

    def send(self, alert: Alert) -> None: ...


@dataclass(frozen=True)
class WebhookChannel:
    url: str
    timeout: float = 10.0
    name: str = "webhook"

    def payload(self, alert: Alert) -> dict:
        fields = [
            f"*{label}:* {value}"
            for label, value in (("Asset", alert.asset), ("Check", alert.check), ("Source", alert.partition), ("Job", alert.job))
            if value
        ]
        blocks = [
            {"type": "header", "text": {"type": "plain_text", "text": alert.title[:150]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": alert.message[:2900] or alert.title}},
        ]
        if fields:
            blocks.append({"type": "section", "fields": [{"type": "mrkdwn", "text": f} for f in fields]})
        if alert.run_url:
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"<{alert.run_url}|Open the run in Dagster>"}})
        # `text` and `blocks` are what Slack reads; `alert` is for receivers that want fields.
        return {"text": alert.text(), "blocks": blocks, "alert": alert.to_json()}

    def where(self) -> str:
        # The host alone: a webhook's path is often its secret (Slack's are), and descriptions are public.
        return f"a webhook on {urllib.parse.urlsplit(self.url).hostname or 'an unnamed host'} (LECTIO_ALERT_WEBHOOK_URL)"

    def send(self, alert: Alert) -> None:
        body = json.dumps(self.payload(alert), default=str).encode()
        request = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            response.read()


@dataclass(frozen=True)
class EmailChannel:
    host: str
    port: int
    sender: str
    recipients: tuple[str, ...]
    user: str | None = None
    password: str | None = None
    starttls: bool = False
    timeout: float = 10.0
    name: str = "email"

    def message(self, alert: Alert) -> EmailMessage:
        # Lines up to RFC 5322's 998: the default folding at 78 breaks a long subject before its
        # first word, which mail clients then show with a leading space.
        message = EmailMessage(policy=email.policy.SMTP.clone(max_line_length=998))
        message["Subject"] = alert.title
        message["From"] = self.sender
        message["To"] = ", ".join(self.recipients)
        details = "\n".join(f"{k}: {v}" for k, v in alert.details.items())
        message.set_content(alert.text() + ("\n\n" + details if details else "") + "\n")
        return message

    def where(self) -> str:
        return f"e-mail to {', '.join(self.recipients)} through {self.host} (LECTIO_ALERT_EMAIL_TO)"

    def send(self, alert: Alert) -> None:
        with smtplib.SMTP(self.host, self.port, timeout=self.timeout) as smtp:
            if self.starttls:
                smtp.starttls()
            if self.user:
                smtp.login(self.user, self.password or "")
            smtp.send_message(self.message(alert))


@dataclass(frozen=True)
class LogFileChannel:
    path: Path
    name: str = "log"

    def where(self) -> str:
        return f"the file {self.path} (LECTIO_ALERT_LOG)"

    def send(self, alert: Alert) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = {"sent_at": datetime.now(timezone.utc).isoformat(), **alert.to_json()}
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, default=str) + "\n")


def channels_from_settings(settings: Settings) -> list[Channel]:
    config = settings.alerts
    channels: list[Channel] = []
    if config.webhook_url:
        channels.append(WebhookChannel(config.webhook_url))
    if config.smtp_host and config.email_to:
        channels.append(
            EmailChannel(
                config.smtp_host, config.smtp_port, config.email_from, config.email_to,
                config.smtp_user, config.smtp_password, config.smtp_starttls,
            )
        )
    elif config.smtp_host:
        log.warning("LECTIO_ALERT_SMTP_HOST is set but LECTIO_ALERT_EMAIL_TO is not: e-mail alerts are off")
    if config.log_file:
        channels.append(LogFileChannel(config.log_file))
    return channels


@dataclass
class Delivery:
    fingerprint: str
    channel: str
    status: str  # "sent", "already_sent" or "failed"
    error: str | None = None


def ensure_deliveries_table(conn: psycopg.Connection) -> None:
    conn.execute(DELIVERIES_DDL)


def cleared(conn: psycopg.Connection, check: str) -> int:
    """The standing condition `check` reports no longer holds: what was sent about it is
    forgotten, so the condition alerts again if it returns. The number of records dropped."""
    ensure_deliveries_table(conn)
    return conn.execute("DELETE FROM alert_deliveries WHERE alert ->> 'check' = %s AND alert ->> 'state' IS NOT NULL",
                        (check,)).rowcount


def send_alerts(conn: psycopg.Connection, alerts: Iterable[Alert], channels: list[Channel]) -> list[Delivery]:
    """Send each alert on each channel it has not reached yet; one failing channel never stops
    the others (it is logged and reported as `failed`)."""
    ensure_deliveries_table(conn)
    deliveries = []
    for alert in alerts:
        for channel in channels:
            claimed = conn.execute(
                "INSERT INTO alert_deliveries (fingerprint, channel, alert) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING RETURNING 1",
                (alert.fingerprint, channel.name, json.dumps(alert.to_json(), default=str)),
            ).fetchone()
            if not claimed:
                deliveries.append(Delivery(alert.fingerprint, channel.name, "already_sent"))
                continue
            try:
                channel.send(alert)
            except Exception as exc:  # any channel error: log it and carry on with the rest
                log.warning("alert %s not sent on %s: %s", alert.title, channel.name, exc)
                conn.execute(
                    "DELETE FROM alert_deliveries WHERE fingerprint = %s AND channel = %s",
                    (alert.fingerprint, channel.name),
                )
                deliveries.append(Delivery(alert.fingerprint, channel.name, "failed", why_not_sent(exc)))
            else:
                deliveries.append(Delivery(alert.fingerprint, channel.name, "sent"))
    return deliveries



def why_not_sent(exc: Exception) -> str:
    """Why a channel failed, as one plain line for a tick's log: urllib wraps the socket's own
    error ("<urlopen error [Errno 111] Connection refused>"), so its reason is taken; an error with
    no words of its own is named by its class, which is then all there is to say."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError) else exc
    return one_line(str(reason)) or type(exc).__name__


# What Python's traceback puts before an error's words: a dotted class path ("lectio.sources.SourceError: "),
# or an OSError's class, whose "[Errno 21] Is a directory" says it again; and what SQLAlchemy puts
# before the driver's error it wraps ("(psycopg2.OperationalError) ").
_CLASS_PATH = re.compile(r"^(?:\w+(?:\.\w+)+: |\w+Error: (?=\[Errno \d+\])|\((?:\w+\.)+\w+\) )+")


def one_line(message: str) -> str:
    """An error's words as one plain line, for a failure line, an alert or a check: its lines
    joined, without the dotted class path before them, which names code, not the problem. A
    builtin's bare name stays ("KeyError: 'x'" says little without it)."""
    joined = " ".join(line.strip() for line in message.strip().splitlines() if line.strip())
    return _CLASS_PATH.sub("", joined)

def destinations(channels: list[Channel]) -> str:
    """Where alerts go, in one sentence: the alert sensors' descriptions said what they sent and
    not where, so a team could not tell from the UI whether anyone would be told."""
    if not channels:
        return ("Alerts go nowhere: no channel is set (LECTIO_ALERT_WEBHOOK_URL, LECTIO_ALERT_SMTP_HOST with "
                "LECTIO_ALERT_EMAIL_TO, or LECTIO_ALERT_LOG where the code location runs).")
    return "Alerts go to " + "; ".join(channel.where() for channel in channels) + "."
