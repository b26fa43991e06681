"""What a command prints: its payload as JSON under `--json`, else its text."""

from __future__ import annotations

import json


def print_payload(args, payload: dict, text: str) -> None:
    print(json.dumps(payload, indent=2, default=str) if args.json else text)
