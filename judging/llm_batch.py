"""The Batch API side of the LLM seam: files and batches of an OpenAI-compatible API.

`judging.llm` is the one place that talks to a model endpoint; this module is its
second door, for runs made with ``batch`` (issue 36). It sends nothing that `llm`
would not send: each line's body is built by `llm.chat_request_body` (the builder of
the synchronous path) and each result's body is read by the same reply reader
(`JudgeClient.read_reply`), so parsing, usage and every request option work the same.
The same refusal rules apply before anything is sent (`JudgeClient`'s: a host
``JUDGE_ALLOWED_HOSTS`` refuses, an undeclared key variable, a stored key whose
allowed hosts do not hold the host), redirects are never followed, and every message
is scrubbed of the key.

Operations (each raises `llm.JudgeError`, typed as a synchronous call's error):

- `BatchClient.upload(path)`: ``POST /files`` (purpose "batch"), the file streamed
  from disk, never read whole;
- `create(input_file_id)`: ``POST /batches`` (endpoint ``/v1/chat/completions``,
  window 24h). Never sent twice for one file: after a failure that may have created
  the batch (timeout, 5xx), `find_by_input_file` looks for it before a retry;
- `retrieve`, `cancel`, `find_by_input_file` (``GET /batches`` pages);
- `lines(file_id)`: an output or error file's lines, streamed.

`write_line` writes one request line of a batch input file.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Iterator
from typing import IO, Any

import httpx
import openai

from judging import llm

log = logging.getLogger(__name__)

BATCH_ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
# OpenAI's documented limits of one batch input file.
DEFAULT_MAX_LINES = 50_000
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
# How many times an operation that changes nothing is retried on a transient error.
OPERATION_RETRIES = 5
# A provider batch state -> whether it is final.
FINAL_STATUSES = frozenset({"completed", "failed", "expired", "cancelled"})


def custom_id(call_id: int) -> str:
    """The `custom_id` of a call's line; `call_id_of` reads it back."""
    return f"call-{call_id}"


def call_id_of(value: Any) -> int | None:
    """The call id a `custom_id` names, or None when it names none of ours."""
    if not isinstance(value, str) or not value.startswith("call-"):
        return None
    digits = value.removeprefix("call-")
    return int(digits) if digits.isdigit() else None


def line_bytes(call_id: int, request: llm.ChatRequest) -> bytes:
    """One input line (with its newline) for `request`: the synchronous path's body."""
    line = {
        "custom_id": custom_id(call_id),
        "method": "POST",
        "url": BATCH_ENDPOINT,
        "body": llm.chat_request_body(request),
    }
    return (json.dumps(line, separators=(",", ":")) + "\n").encode()


def write_line(out: IO[bytes], data: bytes) -> int:
    """Write one line made by `line_bytes`; returns its size in bytes."""
    out.write(data)
    return len(data)


class BatchClient:
    """Files and batches of one endpoint, with the synchronous client's key, refusal,
    scrub and reply reader (`chat`). Synchronous (a batch driver polls; it does not
    need an event loop). Use as a context manager or call `close`."""

    def __init__(  # noqa: PLR0913 - the endpoint's settings, keyword-only, as JudgeClient's
        self,
        *,
        base_url: str,
        api_key: str | None,
        timeout: float,
        refusal: str = "",
        key_grant: llm.KeyGrant | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        rng: random.Random | None = None,
    ):
        self.chat = llm.JudgeClient(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            refusal=refusal,
            key_grant=key_grant,
            transport="httpx",
        )
        self.base_url = base_url.rstrip("/")
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._rng = rng or random.Random()
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, read=max(timeout, 60.0)),
            follow_redirects=False,
        )

    def __enter__(self) -> BatchClient:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def __repr__(self) -> str:
        return f"BatchClient(base_url={self.chat.scrub(self.base_url)!r})"

    # --- operations -------------------------------------------------------------------

    def upload(self, path: str, *, filename: str = "batch.jsonl") -> dict:
        """Upload the JSON Lines file at `path` (purpose "batch"), streamed from disk.
        Returns the provider's file object (its ``id``)."""

        def send() -> httpx.Response:
            with open(path, "rb") as handle:
                return self._http.post(
                    self._url("/files"),
                    headers=self.chat.auth_headers(),
                    data={"purpose": "batch"},
                    files={"file": (filename, handle, "application/jsonl")},
                )

        return self._with_retries("upload the batch file", send)

    def create(self, input_file_id: str, *, metadata: dict | None = None) -> dict:
        """Create the batch of `input_file_id`. A failure that may have created it is
        followed by a look for it (`find_by_input_file`) before any retry: one file
        never makes two batches."""
        body = {
            "input_file_id": input_file_id,
            "endpoint": BATCH_ENDPOINT,
            "completion_window": COMPLETION_WINDOW,
            "metadata": metadata or {},
        }
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._call(
                    "create the batch",
                    lambda: self._http.post(
                        self._url("/batches"),
                        headers=self.chat.auth_headers(),
                        json=body,
                    ),
                )
            except llm.TransientJudgeError as exc:
                found = self.find_by_input_file(input_file_id)
                if found is not None:
                    return found
                if attempt > OPERATION_RETRIES:
                    raise
                self._backoff(attempt, exc)

    def retrieve(self, batch_id: str) -> dict:
        return self._with_retries(
            "poll the batch",
            lambda: self._http.get(
                self._url(f"/batches/{batch_id}"), headers=self.chat.auth_headers()
            ),
        )

    def cancel(self, batch_id: str) -> dict:
        return self._with_retries(
            "cancel the batch",
            lambda: self._http.post(
                self._url(f"/batches/{batch_id}/cancel"),
                headers=self.chat.auth_headers(),
            ),
        )

    def find_by_input_file(self, input_file_id: str) -> dict | None:
        """The provider's batch made from `input_file_id`, or None (all pages)."""
        after = None
        while True:
            params = {"limit": 100, **({"after": after} if after else {})}
            page = self._with_retries(
                "list the batches",
                lambda params=params: self._http.get(
                    self._url("/batches"),
                    headers=self.chat.auth_headers(),
                    params=params,
                ),
            )
            data = page.get("data") or []
            for batch in data:
                if isinstance(batch, dict) and batch.get("input_file_id") == (
                    input_file_id
                ):
                    return batch
            if not page.get("has_more") or not data:
                return None
            after = data[-1].get("id")

    def lines(self, file_id: str) -> Iterator[str]:
        """The lines of file `file_id` (an output or error file), streamed."""
        self._refuse()
        try:
            with self._http.stream(
                "GET",
                self._url(f"/files/{file_id}/content"),
                headers=self.chat.auth_headers(),
            ) as response:
                if response.status_code != 200:
                    response.read()
                    raise self._error(response, "download the batch results")
                for line in response.iter_lines():
                    if line.strip():
                        yield line
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, "download the batch results") from None

    def read_reply(self, body: Any, request: llm.ChatRequest) -> llm.ChatResult:
        """A result line's ``response.body``, read as a synchronous reply is."""
        text = body if isinstance(body, str) else json.dumps(body)
        return self.chat.read_reply(text, request)

    def read_reply_line(self, line: dict, request: llm.ChatRequest) -> llm.ChatResult:
        """One result line (of the output or the error file) as a synchronous call's
        outcome: a 200's body read by the sync path's reply reader; another status
        typed as that HTTP answer would be (`JudgeClient.status_error`); a line with
        an ``error`` object and no response fails with kind ``batch_line``."""
        response = line.get("response")
        if not isinstance(response, dict):
            error = line.get("error") if isinstance(line.get("error"), dict) else {}
            code = self.chat.scrub(str(error.get("code") or "no_response"))
            message = self.chat.scrub(str(error.get("message") or "no response"))
            raise llm.TransientJudgeError(
                "batch_line", f"the batch line failed: {code}: {message}"
            )
        status = response.get("status_code")
        if status == 200:
            return self.read_reply(response.get("body"), request)
        body = response.get("body")
        fake = httpx.Response(
            status if isinstance(status, int) and 100 <= status < 600 else 500,
            json=body,
            request=httpx.Request("POST", self._url("/chat/completions")),
        )
        raise self.chat.status_error(
            openai.APIStatusError(f"HTTP {status}", response=fake, body=body)
        )

    # --- plumbing ---------------------------------------------------------------------

    def _url(self, path: str) -> str:
        return self.base_url + path

    def _refuse(self) -> None:
        if self.chat.refusal:
            raise llm.PermanentJudgeError("refused", self.chat.refusal, attempts=0)

    def _with_retries(self, what: str, send) -> dict:
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._call(what, send)
            except llm.TransientJudgeError as exc:
                if attempt > OPERATION_RETRIES:
                    raise
                self._backoff(attempt, exc)

    def _backoff(self, attempt: int, exc: llm.TransientJudgeError) -> None:
        delay = exc.retry_after
        if delay is None:
            cap = min(self.backoff_max, self.backoff_base * (2 ** (attempt - 1)))
            delay = self._rng.uniform(0, cap)
        log.warning("batch operation failed (%s); retrying in %.2fs", exc, delay)
        time.sleep(min(delay, llm.RETRY_AFTER_MAX))

    def _call(self, what: str, send) -> dict:
        self._refuse()
        try:
            response = send()
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, what) from None
        if response.status_code != 200:
            raise self._error(response, what)
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise llm.TransientJudgeError(
                "invalid_response",
                f"could not {what}: the reply is not a JSON object "
                f"(from {self.chat.scrub(self.base_url)})",
                status_code=200,
            )
        return data

    def _error(self, response: httpx.Response, what: str) -> llm.JudgeError:
        try:
            body = response.json()
        except ValueError:
            body = response.text
        error = self.chat.status_error(
            openai.APIStatusError(
                f"HTTP {response.status_code}", response=response, body=body
            )
        )
        error.message = f"could not {what}: {error.message}"
        return error

    def _transport_error(self, exc: httpx.HTTPError, what: str) -> llm.JudgeError:
        kind = "timeout" if isinstance(exc, httpx.TimeoutException) else "connection"
        return llm.TransientJudgeError(
            kind,
            f"could not {what}: {self.chat.scrub(type(exc).__name__ + ': ' + str(exc))}"
            f" (at {self.chat.scrub(self.base_url)})",
        )
