"""How the alert sensors send: where this code location's alerts go, and one tick's alerts
delivered with a line in the tick's log for each channel that sent or failed."""

from __future__ import annotations

from lectio.alerts import Alert, channels_from_settings, destinations, send_alerts
from lectio.settings import Settings, load_settings
from resources import DatabaseResource


def deliver(alerts: list[Alert], database: DatabaseResource, settings: Settings, log_fn) -> None:
    if not alerts:
        return
    with database.connect() as conn:
        deliveries = send_alerts(conn, alerts, channels_from_settings(settings))
    # The tick's log names what each alert is about; its fingerprint means nothing to a reader.
    subjects = {a.fingerprint: a.subject for a in alerts}
    for d in deliveries:
        if d.status == "failed":
            log_fn(f"alert ({subjects[d.fingerprint]}) not sent on {d.channel}: {d.error}")
        elif d.status == "sent":
            log_fn(f"alert ({subjects[d.fingerprint]}) sent on {d.channel}")


def alerts_go_to() -> str:
    """Where this code location's alerts go, as its environment sets the channels (read as the
    definitions load, as the sensors read it as they send)."""
    return destinations(channels_from_settings(load_settings()))
