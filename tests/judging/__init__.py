"""Helpers shared by the judging tests."""

from __future__ import annotations

import json
import urllib.request


class FakeJudge:
    """Control endpoints of a running fake judge server (see judging.fake_server)."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.root = base_url.removesuffix("/v1")

    def call(self, method: str, path: str, payload: dict | None = None) -> dict:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(
            self.root + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def stats(self) -> dict:
        return self.call("GET", "/stats")

    def last_request(self) -> dict:
        return self.call("GET", "/last_request")["body"]

    def script(self, *outcomes) -> None:
        self.call("POST", "/script", {"outcomes": list(outcomes)})

    def reset(self, **settings) -> None:
        self.call("POST", "/reset", settings)
