"""How the alert sensors send: where this code location's alerts go, and one tick's alerts
delivered with a line in the tick's log for each channel that sent or failed."""

from __future__ import annotations

from lectio.alerts import Alert, channels_from_settings, destinations, send_alerts
from lectio.settings import Settings, load_settings
from resources import DatabaseResource


# What became of one alert in a tick (Outcome): sent on some channel; held back, every channel
# having had it already (sent before, or one alert per set of failed sources); or not sent, every
# channel failing or none set.
SENT, HELD, UNSENT = "sent", "held", "unsent"


def deliver(alerts: list[Alert], database: DatabaseResource, settings: Settings, log_fn) -> list[str]:
    """Sends `alerts`, and says what became of each, in their order: SENT, HELD or UNSENT. A tick
    then says what it sent, and apart from it what it held back (its message counted those as
    sent, and an operator read that the team was paged again when nobody was)."""
    if not alerts:
        return []
    channels = channels_from_settings(settings)
    with database.connect() as conn:
        deliveries = send_alerts(conn, alerts, channels)
    # The tick's log names what each alert is about; its fingerprint means nothing to a reader.
    subjects = {a.fingerprint: a.subject for a in alerts}
    for d in deliveries:
        if d.status == "failed":
            log_fn(f"alert ({subjects[d.fingerprint]}) not sent on {d.channel}: {d.error}")
        elif d.status == "sent":
            log_fn(f"alert ({subjects[d.fingerprint]}) sent on {d.channel}")
    # send_alerts answers each alert on each channel, in order; an alert sent twice in one tick
    # (the same set of failed sources) is sent the first time and held the second.
    per_alert = [{d.status for d in deliveries[i * len(channels):(i + 1) * len(channels)]} for i in range(len(alerts))]
    return [SENT if "sent" in got else HELD if got == {"already_sent"} else UNSENT for got in per_alert]


def alerts_go_to() -> str:
    """Where this code location's alerts go, as its environment sets the channels (read as the
    definitions load, as the sensors read it as they send)."""
    return destinations(channels_from_settings(load_settings()))
