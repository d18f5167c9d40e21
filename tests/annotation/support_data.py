"""A small customer-support dataset written for these tests: tickets (instructions)
with their own domains, difficulty levels and categorical columns, and two models'
replies. Not FLASK data: its taxonomy is its own."""

from __future__ import annotations

import json
from pathlib import Path

TAXONOMY = {
    "domains": [
        "billing",
        "shipping",
        {"key": "account", "label": "Account access"},
    ],
    "difficulty": {"1": "routine", "2": "tricky", "3": "escalation"},
    "facets": [{"name": "channel", "values": ["email", "chat", "phone"]}],
}

TICKETS = [
    # id, ticket text, domains, difficulty, channel, language
    ("t1", "I was charged twice for my March invoice.", ["billing"], "routine",
     "email", "en"),
    ("t2", "My parcel shows delivered but nothing arrived.", ["Shipping"], 2,
     "chat", "en"),
    ("t3", "I cannot log in after resetting my password.", ["account access"], 1,
     "Phone", "de"),
    ("t4", "Refund the duplicate charge and change my delivery address.",
     ["billing", "shipping"], "escalation", "email", "de"),
    ("t5", "Two-factor codes never reach my phone.", ["account"], "tricky",
     "chat", "fr"),
    ("t6", "Why is there a fee on my statement?", ["billing"], None, "email", "en"),
]  # fmt: skip

REPLIES = {
    "helper-a": "Thanks for reaching out: here is what I did for ticket {id}.",
    "helper-b": "Please contact support about ticket {id}.",
}


def support_rows() -> list[dict]:
    """One row per (ticket, model), with the ticket's metadata on every row."""
    rows = []
    for ext_id, text, domains, difficulty, channel, language in TICKETS:
        for model, reply in REPLIES.items():
            rows.append(
                {
                    "id": ext_id,
                    "instruction": text,
                    "domains": domains,
                    "difficulty": difficulty,
                    "channel": channel,
                    "language": language,
                    "model": model,
                    "response": reply.format(id=ext_id),
                }
            )
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_taxonomy(path: Path, taxonomy: dict | None = None) -> Path:
    path.write_text(json.dumps(taxonomy or TAXONOMY), encoding="utf-8")
    return path
