"""The fake judge server's Batch API (issue 36): ``/v1/files`` and ``/v1/batches`` as
OpenAI documents them, for tests and benches.

- ``POST /v1/files`` (multipart ``purpose`` = "batch" and ``file``): the file is
  streamed to disk; ``GET /v1/files/{id}`` and ``GET /v1/files/{id}/content``.
- ``POST /v1/batches`` (``input_file_id``, ``endpoint`` "/v1/chat/completions",
  ``completion_window`` "24h"), ``GET /v1/batches/{id}``, ``GET /v1/batches``
  (newest first, ``limit`` and ``after``), ``POST /v1/batches/{id}/cancel``.
- ``GET /batch_stats``: lines submitted, by ``custom_id`` (``?ids=1`` lists the
  counts), duplicates, batches by status.
- ``POST /batch_release``: the batches held by ``batch_hold_after`` go on.

A batch is validated first (each line a JSON object with a string ``custom_id``
unique in the file, ``method`` POST, ``url`` the batch's endpoint, an object
``body``; at most ``batch_max_lines`` lines and ``batch_max_bytes`` bytes): a file
that breaks a rule fails the batch, with errors naming the line, as OpenAI does.
Then it waits ``batch_delay_seconds`` (cancellable) and answers every line through
the server's own chat completions handler (so each setting and script of the
synchronous server applies, including its latency: set ``latency_ms`` 0 for speed),
``batch_concurrency`` lines at a time. A line whose ``custom_id`` falls in
``batch_fail_share`` (by a hash) fails its first ``batch_fail_times`` submissions
with a 500 in the error file; ``batch_unknown_ids`` adds that many result lines for
``custom_id`` s the file never had. Files live in a temporary directory, written and
read line by line.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable

from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

BATCH_ENDPOINT = "/v1/chat/completions"


class _BatchState:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="fake-batches-")
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.tasks: dict[str, asyncio.Task] = {}
        self.submitted: Counter[str] = Counter()  # custom_id -> lines submitted
        self.lines_submitted = 0
        self.order: dict[str, int] = {}  # batch id -> its place in creation order
        self.released: asyncio.Event | None = None  # made on the server's loop

    def path(self, file_id: str) -> str:
        return os.path.join(self.dir, file_id)


BATCHES = web.AppKey("batches", _BatchState)
CHAT = web.AppKey("fake_batch_chat", object)
CONFIG_OF = web.AppKey("fake_batch_config", object)


def _error(status: int, message: str, param: str | None = None) -> web.Response:
    body = {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": param,
            "code": None,
        }
    }
    return web.json_response(body, status=status)


def _file_object(file_id: str, size: int, filename: str, purpose: str) -> dict:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": int(time.time()),
        "filename": filename,
        "purpose": purpose,
    }


async def upload_file(request: web.Request) -> web.Response:
    store = request.app[BATCHES]
    try:
        reader = await request.multipart()
    except (AssertionError, ValueError):
        return _error(400, "The body must be multipart/form-data.")
    purpose, filename, file_id, size = "", "", "", 0
    while (part := await reader.next()) is not None:
        if part.name == "purpose":
            purpose = (await part.text()).strip()
        elif part.name == "file":
            filename = part.filename or "upload"
            file_id = f"file-{uuid.uuid4().hex[:24]}"
            with open(store.path(file_id), "wb") as out:
                while chunk := await part.read_chunk(256 * 1024):
                    out.write(chunk)
                    size += len(chunk)
    if not file_id:
        return _error(400, "'file' is required.", "file")
    if purpose != "batch":
        os.unlink(store.path(file_id))
        return _error(400, f"'purpose' must be 'batch', not {purpose!r}.", "purpose")
    store.files[file_id] = _file_object(file_id, size, filename, purpose)
    return web.json_response(store.files[file_id])


async def get_file(request: web.Request) -> web.Response:
    store = request.app[BATCHES]
    file = store.files.get(request.match_info["file_id"])
    if file is None:
        return _error(404, "No such file.", "file_id")
    return web.json_response(file)


async def file_content(request: web.Request) -> web.StreamResponse:
    store = request.app[BATCHES]
    file_id = request.match_info["file_id"]
    if file_id not in store.files:
        return _error(404, "No such file.", "file_id")
    return web.FileResponse(store.path(file_id))


def _batch_object(batch_id: str, body: dict, lines: int) -> dict:
    return {
        "id": batch_id,
        "object": "batch",
        "endpoint": body["endpoint"],
        "errors": None,
        "input_file_id": body["input_file_id"],
        "completion_window": body["completion_window"],
        "status": "validating",
        "output_file_id": None,
        "error_file_id": None,
        "created_at": int(time.time()),
        "in_progress_at": None,
        "finalizing_at": None,
        "completed_at": None,
        "failed_at": None,
        "cancelling_at": None,
        "cancelled_at": None,
        "request_counts": {"total": lines, "completed": 0, "failed": 0},
        "metadata": body.get("metadata") or {},
    }


async def create_batch(request: web.Request) -> web.Response:
    store = request.app[BATCHES]
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "The body is not valid JSON.")
    if not isinstance(body, dict):
        return _error(400, "The body must be a JSON object.")
    if body.get("endpoint") != BATCH_ENDPOINT:
        return _error(400, f"'endpoint' must be {BATCH_ENDPOINT!r}.", "endpoint")
    if body.get("completion_window") != "24h":
        return _error(400, "'completion_window' must be '24h'.", "completion_window")
    if body.get("input_file_id") not in store.files:
        return _error(404, "No such file.", "input_file_id")
    batch_id = f"batch_{uuid.uuid4().hex[:24]}"
    batch = _batch_object(batch_id, body, 0)
    store.order[batch_id] = len(store.order) + 1
    store.batches[batch_id] = batch
    config = request.app[CONFIG_OF](request.app)
    chat = request.app[CHAT]
    headers = {"Authorization": request.headers.get("Authorization", "")}
    store.tasks[batch_id] = asyncio.ensure_future(
        _process(request.app, store, batch, config, chat, headers)
    )
    return web.json_response(batch)


async def get_batch(request: web.Request) -> web.Response:
    batch = request.app[BATCHES].batches.get(request.match_info["batch_id"])
    if batch is None:
        return _error(404, "No such batch.", "batch_id")
    return web.json_response(batch)


async def list_batches(request: web.Request) -> web.Response:
    store = request.app[BATCHES]
    ordered = list(reversed(list(store.batches.values())))
    after = request.query.get("after")
    if after:
        ids = [b["id"] for b in ordered]
        ordered = ordered[ids.index(after) + 1 :] if after in ids else []
    try:
        limit = max(1, min(100, int(request.query.get("limit", "20"))))
    except ValueError:
        return _error(400, "'limit' must be an integer.", "limit")
    page = ordered[:limit]
    return web.json_response(
        {"object": "list", "data": page, "has_more": len(ordered) > limit}
    )


async def cancel_batch(request: web.Request) -> web.Response:
    store = request.app[BATCHES]
    batch = store.batches.get(request.match_info["batch_id"])
    if batch is None:
        return _error(404, "No such batch.", "batch_id")
    if batch["status"] in ("completed", "failed", "expired", "cancelled"):
        return _error(409, f"Cannot cancel a batch that is {batch['status']}.")
    batch["status"] = "cancelling"
    batch["cancelling_at"] = int(time.time())
    task = store.tasks.get(batch["id"])
    if task is not None and not task.done():
        task.cancel()
    return web.json_response(batch)


async def batch_release(request: web.Request) -> web.Response:
    store = request.app[BATCHES]
    if store.released is None:
        store.released = asyncio.Event()
    store.released.set()
    return web.json_response({"released": True})


async def batch_stats(request: web.Request) -> web.Response:
    store = request.app[BATCHES]
    payload = {
        "lines_submitted": store.lines_submitted,
        "distinct_custom_ids": len(store.submitted),
        "duplicates": sum(n - 1 for n in store.submitted.values() if n > 1),
        "batches": dict(Counter(b["status"] for b in store.batches.values())),
    }
    if request.query.get("ids"):
        payload["custom_ids"] = dict(store.submitted)
    return web.json_response(payload)


# --- processing -------------------------------------------------------------------------


def _validate(path: str, config) -> tuple[list[dict], int]:
    """(errors naming the line, number of lines) of an input file, read line by line."""
    errors: list[dict] = []
    seen: set[str] = set()
    size = os.path.getsize(path)
    if size > config.batch_max_bytes:
        errors.append(
            {
                "code": "too_large",
                "message": f"The input file has {size} bytes; the limit is "
                f"{config.batch_max_bytes}.",
                "param": None,
                "line": None,
            }
        )
    n = 0
    with open(path, "rb") as handle:
        for n, raw in enumerate(handle, start=1):  # noqa: B007 - n is the count
            problem = _line_problem(raw, seen)
            if problem and len(errors) < 100:
                errors.append(
                    {"code": "invalid_request", "message": problem, "line": n}
                    | {"param": None}
                )
    if n > config.batch_max_lines:
        errors.append(
            {
                "code": "too_many_requests",
                "message": f"The input file has {n} lines; the limit is "
                f"{config.batch_max_lines}.",
                "param": None,
                "line": None,
            }
        )
    return errors, n


def _line_problem(raw: bytes, seen: set[str]) -> str:
    try:
        line = json.loads(raw)
    except ValueError:
        return "The line is not valid JSON."
    if not isinstance(line, dict):
        return "The line is not a JSON object."
    cid = line.get("custom_id")
    if not isinstance(cid, str) or not cid:
        return "'custom_id' must be a non-empty string."
    if cid in seen:
        return f"The custom_id {cid!r} appears more than once in the file."
    seen.add(cid)
    if line.get("method") != "POST":
        return "'method' must be 'POST'."
    if line.get("url") != BATCH_ENDPOINT:
        return f"'url' must be {BATCH_ENDPOINT!r}, the batch's endpoint."
    if not isinstance(line.get("body"), dict):
        return "'body' must be a JSON object."
    return ""


def _fails(custom_id: str, times_seen: int, config) -> bool:
    if config.batch_fail_share <= 0 or times_seen > config.batch_fail_times:
        return False
    digest = hashlib.sha256(custom_id.encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 < config.batch_fail_share


class _LineRequest:
    """What the chat completions handler reads from a request, for one batch line."""

    method = "POST"
    can_read_body = True

    def __init__(self, app: web.Application, headers: dict, body: bytes, url: str):
        self.app = app
        self.headers = CIMultiDict(headers)
        self._body = body
        self.rel_url = URL(url)
        self.path = self.rel_url.path
        self.query = self.rel_url.query

    async def json(self):
        return json.loads(self._body)

    async def read(self) -> bytes:
        return self._body

    async def text(self) -> str:
        return self._body.decode()


async def _answer_line(  # noqa: PLR0913 - one line's context, passed whole
    app, store, raw: bytes, config, chat, headers
) -> tuple[bool, dict]:
    line = json.loads(raw)
    cid = line["custom_id"]
    request_id = f"req_{uuid.uuid4().hex[:16]}"
    if _fails(cid, store.submitted[cid], config):
        body = {
            "error": {"message": "The fake batch line failed.", "type": "server_error"}
        }
        response = {"status_code": 500, "request_id": request_id, "body": body}
        return False, {
            "id": f"batch_req_{request_id}",
            "custom_id": cid,
            "response": response,
            "error": None,
        }
    body = json.dumps(line["body"]).encode()
    reply = await chat(_LineRequest(app, headers, body, line["url"]))
    try:
        payload = json.loads(reply.text)
    except ValueError:
        payload = reply.text
    response = {"status_code": reply.status, "request_id": request_id, "body": payload}
    result = {
        "id": f"batch_req_{request_id}",
        "custom_id": cid,
        "response": response,
        "error": None,
    }
    return reply.status == 200, result


async def _process(  # noqa: PLR0913 - the batch and what answers its lines
    app: web.Application,
    store: _BatchState,
    batch: dict,
    config,
    chat: Callable[[object], Awaitable[web.StreamResponse]],
    headers: dict,
) -> None:
    path = store.path(batch["input_file_id"])
    try:
        errors, n = await asyncio.to_thread(_validate, path, config)
    except asyncio.CancelledError:
        batch.update(status="cancelled", cancelled_at=int(time.time()))
        return
    batch["request_counts"]["total"] = n
    if errors:
        batch.update(
            status="failed",
            failed_at=int(time.time()),
            errors={"object": "list", "data": errors},
        )
        return
    with open(path, "rb") as handle:
        for raw in handle:
            cid = json.loads(raw)["custom_id"]
            store.submitted[cid] += 1
            store.lines_submitted += 1
    batch.update(status="in_progress", in_progress_at=int(time.time()))
    out_id, err_id = f"file-{uuid.uuid4().hex[:24]}", f"file-{uuid.uuid4().hex[:24]}"
    counts = batch["request_counts"]
    out = open(store.path(out_id), "wb")  # noqa: SIM115 - closed in finally
    err = open(store.path(err_id), "wb")  # noqa: SIM115 - closed in finally
    try:
        await asyncio.sleep(config.batch_delay_seconds)
        hold = config.batch_hold_after
        if hold is not None and store.order[batch["id"]] > hold:
            if store.released is None:
                store.released = asyncio.Event()
            await store.released.wait()
        with open(path, "rb") as handle:
            chunk: list[bytes] = []
            for raw in handle:
                chunk.append(raw)
                if len(chunk) >= max(1, config.batch_concurrency):
                    await _answer_chunk(
                        app, store, chunk, config, chat, headers, out, err, counts
                    )
                    chunk = []
            if chunk:
                await _answer_chunk(
                    app, store, chunk, config, chat, headers, out, err, counts
                )
        for i in range(config.batch_unknown_ids):
            stray = {
                "id": f"batch_req_stray{i}",
                "custom_id": f"stray-{i}",
                "response": {"status_code": 200, "request_id": "", "body": {}},
                "error": None,
            }
            out.write((json.dumps(stray) + "\n").encode())
        batch["status"] = "completed"
        batch["completed_at"] = int(time.time())
    except asyncio.CancelledError:
        batch["status"] = "cancelled"
        batch["cancelled_at"] = int(time.time())
    finally:
        out.close()
        err.close()
        for file_id, key in ((out_id, "output_file_id"), (err_id, "error_file_id")):
            size = os.path.getsize(store.path(file_id))
            if size:
                store.files[file_id] = _file_object(
                    file_id, size, f"{key}.jsonl", "batch_output"
                )
                batch[key] = file_id


async def _answer_chunk(  # noqa: PLR0913 - one chunk of lines and where they go
    app, store, chunk, config, chat, headers, out, err, counts
) -> None:
    answers = await asyncio.gather(
        *(_answer_line(app, store, raw, config, chat, headers) for raw in chunk)
    )
    for ok, result in answers:
        (out if ok else err).write((json.dumps(result) + "\n").encode())
        counts["completed" if ok else "failed"] += 1


def add_batch_routes(
    app: web.Application,
    *,
    chat: Callable[[object], Awaitable[web.StreamResponse]],
    config_of: Callable[[web.Application], object],
) -> None:
    """Serve the Batch API on `app`; `chat` answers one chat completion request and
    `config_of(app)` is the server's current `FakeServerConfig`."""
    app[BATCHES] = _BatchState()
    app[CHAT] = chat
    app[CONFIG_OF] = config_of
    app.router.add_post("/v1/files", upload_file)
    app.router.add_get("/v1/files/{file_id}", get_file)
    app.router.add_get("/v1/files/{file_id}/content", file_content)
    app.router.add_post("/v1/batches", create_batch)
    app.router.add_get("/v1/batches", list_batches)
    app.router.add_get("/v1/batches/{batch_id}", get_batch)
    app.router.add_post("/v1/batches/{batch_id}/cancel", cancel_batch)
    app.router.add_get("/batch_stats", batch_stats)
    app.router.add_post("/batch_release", batch_release)
