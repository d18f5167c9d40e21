"""Rater loop benchmark: serve next + submit a 3-skill form, over HTTP, on PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/rating_loop.py [--data ../shared/flask-data] [--seconds 30]
        [--rubric flask|1-10] [--kind pointwise|pairwise]

Creates a scratch database (dropped at the end) with `--workspaces` workspaces
(default 3), imports the FLASK release (1,740 instructions, 25,500 responses) into
each, creates in each a k=1 campaign over every response, and 21 raters with API
tokens spread over the workspaces (rater i in workspace i mod N, rating its
workspace's campaign), starts gunicorn on loopback, then measures, in a closed loop:

  (a) one rater alone: next + submit, one request at a time;
  (b) 20 concurrent raters, each a distinct user.

Prints p50/p95/p99 per request kind, requests/s and annotations/s, and checks the
overlap and lock invariants in the database at the end. `--kind pairwise` runs the
same loop on a pairwise campaign instead (`--pairs` sampled pairs of the release's
responses, one overall A / B / tie answer each, through the pairwise API). `--rubric 1-10` rates the same
responses on a rubric of three criteria scored 1-10 without N/A (the form's size of
FLASK's per-instruction skills), to compare a 10-point scale with FLASK's 1-5. Targets (issue #3): (a) p95
< 30 ms; (b) >= 150 requests/s with p95 < 250 ms; zero overlap violations.

The load generator is one asyncio process with a minimal HTTP/1.1 client (one
connection per rater, reopened when the server closes it): it shares the 2 cores with
gunicorn and PostgreSQL, and httpx cost about as much CPU per request as the app
itself. Each request's latency is measured client-side around the whole exchange
(connect included), every submit's answer is checked (status submitted, one score per
skill), and the invariants are checked in the database. gunicorn runs 5 sync workers by
default (`--workers`, `--threads`, `--worker-class` change that).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
# A benchmark is a development tool: it runs on the development key unless
# DJANGO_SECRET_KEY is set (flaskapp/secret_key.py).
os.environ.setdefault("FLASK_DEV", "1")
sys.path.insert(0, str(ROOT))


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scratch_database(base_url: str) -> tuple[str, str]:
    name = f"flaskeval_bench_rating_{os.getpid()}"
    parts = urlparse(base_url)
    admin = urlunparse(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunparse(parts._replace(path=f"/{name}")), admin


def drop_database(admin: str, url: str) -> None:
    name = urlparse(url).path.lstrip("/")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


TEN_POINT_RUBRIC = {
    "name": "Bench 1-10",
    "criteria": [
        {
            "key": key,
            "name": key.capitalize(),
            "scale": {"min": 1, "max": 10},
            "anchors": {"1": "Very poor.", "10": "Excellent."},
            "allow_na": False,
        }
        for key in ("correctness", "helpfulness", "clarity")
    ],
}


def prepare(
    data: Path,
    raters: int,
    rubric: str = "flask",
    kind: str = "pointwise",
    pairs=0,
    workspaces: int = 1,
) -> dict:
    """Migrate, then in each of `workspaces` workspaces import the release, and create
    its campaign (on FLASK's rubric, or with `rubric` "1-10" on `TEN_POINT_RUBRIC`;
    with `kind` "pairwise", a pairwise campaign over `pairs` sampled pairs) whose
    raters are that workspace's members. Rater i belongs to workspace i mod
    `workspaces`; the last token is kept for the warm-up."""
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    from annotation.models import Dataset
    from annotation.services.campaign_spec import (
        CampaignSpec,
        PairPolicy,
        ServingPolicy,
    )
    from annotation.services.campaigns import campaign_create
    from annotation.services.imports import dataset_import_files
    from annotation.services.rubrics import rubric_import
    from flaskapp import workspaces as ws_rules
    from flaskapp.models import Workspace
    from flaskapp.tokens import token_create

    call_command("migrate", verbosity=0)
    researcher = User.objects.create_user("bench-researcher", password="x")
    researcher.groups.add(Group.objects.get(name="researcher"))
    rater_group = Group.objects.get(name="rater")
    spaces = [
        Workspace.objects.create(name=f"bench-{w}", slug=f"bench-{w}")
        for w in range(workspaces)
    ]
    for space in spaces:
        ws_rules.membership_ensure(
            workspace=space, user=researcher, role=ws_rules.RESEARCHER
        )
    tokens, members = [], {space.pk: [] for space in spaces}
    for i in range(raters):
        user = User.objects.create_user(f"bench-rater-{i}", password="x")
        user.groups.add(rater_group)
        space = spaces[i % len(spaces)]
        ws_rules.membership_ensure(workspace=space, user=user, role=ws_rules.RATER)
        members[space.pk].append(user)
        tokens.append(token_create(user=user).token)
    evaluation = (data / "evaluation_set/flask_evaluation.jsonl").read_bytes()
    outputs = [
        (p.name, p.read_bytes())
        for p in sorted((data / "model_output/outputs").glob("*.jsonl"))
    ]
    campaign_of_space = {}
    for space in spaces:
        t0 = time.perf_counter()
        dataset_import_files(
            dataset_name="flask", fmt="flask", workspace=space,
            files=[("flask_evaluation.jsonl", evaluation)],
        )  # fmt: skip
        dataset_import_files(
            dataset_name="flask", fmt="flask_outputs", files=outputs, workspace=space
        )
        dataset = Dataset.objects.get(workspace=space, name="flask")
        t1 = time.perf_counter()
        skill_mode = "instruction"
        if rubric == "1-10":
            # The same responses, rated on every criterion of a 1-10 rubric (a
            # scratch database: the dataset is simply pointed at the other rubric).
            dataset.rubric = rubric_import(
                data=json.dumps(TEN_POINT_RUBRIC).encode(),
                file="bench-1-10.json",
                workspace=space,
            )
            dataset.save(update_fields=["rubric"])
            skill_mode = "all"
        campaign = campaign_create(
            spec=CampaignSpec(
                name="bench",
                dataset=dataset,
                skill_mode=skill_mode,
                raters=members[space.pk],
                serving=ServingPolicy(overlap=1),
                pairs=(
                    PairPolicy(mode="sample", sample=pairs, seed=1)
                    if kind == "pairwise"
                    else None
                ),
            ),
            created_by=researcher,
        )
        campaign_of_space[space.pk] = campaign.pk
        print(
            f"setup: workspace {space.slug}: import {t1 - t0:.2f} s, {kind} campaign "
            f"over {campaign.items.count()} items created in "
            f"{time.perf_counter() - t1:.2f} s, {len(members[space.pk])} raters"
        )
    from django.db import connection

    connection.close()
    return {
        "tokens": tokens,
        # Each rater's campaign: the one of their workspace.
        "campaigns": [
            campaign_of_space[spaces[i % len(spaces)].pk] for i in range(raters)
        ],  # fmt: skip
    }


class HttpClient:
    """A minimal HTTP/1.1 client over one keep-alive connection (reopened when the
    server closes it), for one simulated rater.

    The load generator shares the 2 cores with the server, so it must be cheap: a
    general-purpose client (httpx) spent about as much CPU per request as the app.
    Latency is taken around the whole exchange, including a reconnect when one is
    needed, so nothing the rater would wait for is left out.
    """

    def __init__(self, host: str, port: int, token: str):
        self.host, self.port = host, port
        self.head = (
            f"Host: {host}:{port}\r\nAuthorization: Token {token}\r\n"
            "Accept: application/json\r\n"
        )
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except OSError:
                pass
        self.reader = self.writer = None

    async def post(self, path: str, body: bytes = b"") -> tuple[int, bytes]:
        request = (
            f"POST {path} HTTP/1.1\r\n{self.head}"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        for attempt in (1, 2):
            fresh = self.writer is None
            if fresh:
                self.reader, self.writer = await asyncio.open_connection(
                    self.host, self.port
                )
            try:
                self.writer.write(request)
                head = await self.reader.readuntil(b"\r\n\r\n")
            except (OSError, asyncio.IncompleteReadError):
                # A kept-alive connection the server had closed: retry once, fresh.
                await self.close()
                if fresh or attempt == 2:
                    raise
                continue
            return await self._read_body(head)
        raise AssertionError("unreachable")

    async def _read_body(self, head: bytes) -> tuple[int, bytes]:
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            body = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                parts.append(chunk[:-2])
            body = b"".join(parts)
        else:
            body = await self.reader.read()
            headers["connection"] = "close"
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, body


# The API of each kind's rater loop: next, submit.
API = {
    "pointwise": ("/api/rate/campaigns/{}/next/", "/api/rate/assignments/{}/submit/"),
    "pairwise": (
        "/api/pairwise/rate/campaigns/{}/next/",
        "/api/pairwise/rate/assignments/{}/submit/",
    ),
}


def answer_of(kind: str, assignment: dict) -> tuple[dict, int]:
    """A submit body for `assignment` and how many answers it holds: a value of each
    criterion's own scale (as its keys submit it), or a pair's overall label."""
    if kind == "pairwise":
        label = ("A", "B", "tie")[assignment["id"] % 3]
        return {"label": label, "active_seconds": 10.0}, 1
    scores = {}
    for s in assignment["skills"]:
        values = [v for v in s["keys"].values() if v != "na"]
        scores[s["key"]] = values[hash((assignment["id"], s["key"])) % len(values)]
    return {"scores": scores, "active_seconds": 10.0}, len(scores)


def saved_ok(kind: str, saved: dict, n: int) -> bool:
    if saved.get("status") != "submitted":
        return False
    return kind == "pairwise" or len(saved["scores"]) == n


async def rater_loop(
    client: HttpClient,
    campaign_id: int,
    deadline: float,
    max_items: int | None,
    stats: dict,
    kind: str = "pointwise",
) -> None:
    done = 0
    next_path, submit_path = API[kind]
    try:
        while time.perf_counter() < deadline and (
            max_items is None or done < max_items
        ):
            t = time.perf_counter()
            status, raw = await client.post(next_path.format(campaign_id))
            stats["next"].append(time.perf_counter() - t)
            if status != 200:
                stats["errors"].append(f"next {status}: {raw[:200]!r}")
                return
            assignment = json.loads(raw).get("assignment")
            if not assignment:
                stats["empty"] += 1
                return
            answer, n = answer_of(kind, assignment)
            body = json.dumps(answer).encode()
            t = time.perf_counter()
            status, raw = await client.post(submit_path.format(assignment["id"]), body)
            stats["submit"].append(time.perf_counter() - t)
            if status != 200:
                stats["errors"].append(f"submit {status}: {raw[:200]!r}")
                return
            if not saved_ok(kind, json.loads(raw), n):
                stats["errors"].append(f"submit saved something else: {raw[:200]!r}")
                return
            stats["skills"].append(n)
            done += 1
    finally:
        await client.close()


async def run_phase(
    base: str,
    tokens: list[str],
    campaign_ids: list[int],
    seconds: float,
    max_items: int | None,
    kind: str = "pointwise",
) -> dict:
    """Each token is one rater with its own connection, in one closed loop, rating
    in its own campaign (`campaign_ids`, one per token)."""
    stats = {"next": [], "submit": [], "errors": [], "empty": 0, "skills": []}
    parts = urlparse(base)
    clients = [HttpClient(parts.hostname, parts.port, tok) for tok in tokens]
    deadline = time.perf_counter() + seconds
    t0 = time.perf_counter()
    await asyncio.gather(
        *(
            rater_loop(client, campaign_id, deadline, max_items, stats, kind)
            for client, campaign_id in zip(clients, campaign_ids, strict=True)
        )
    )
    stats["elapsed"] = time.perf_counter() - t0
    return stats


def report(
    title: str, stats: dict, p95_target_ms: float, rps_target: float | None
) -> None:
    n_req = len(stats["next"]) + len(stats["submit"])
    rps = n_req / stats["elapsed"]
    print(f"\n== {title}")
    for kind in ("next", "submit"):
        ms = [v * 1000 for v in stats[kind]]
        print(
            f"  {kind:6s} n={len(ms):6d}  p50 {percentile(ms, 50):7.1f} ms  "
            f"p95 {percentile(ms, 95):7.1f} ms  p99 {percentile(ms, 99):7.1f} ms"
        )
    both = [v * 1000 for v in stats["next"] + stats["submit"]]
    p95 = percentile(both, 95)
    print(
        f"  all requests p95 {p95:.1f} ms (target < {p95_target_ms:.0f} ms, "
        f"ratio {p95 / p95_target_ms:.2f})"
    )
    print(
        f"  throughput {rps:.1f} requests/s, {len(stats['submit']) / stats['elapsed']:.1f} "
        f"annotations/s over {stats['elapsed']:.1f} s"
        + (
            f" (target >= {rps_target:.0f} requests/s, ratio {rps / rps_target:.2f})"
            if rps_target
            else ""
        )
    )
    if stats["skills"]:
        print(f"  skills per form: median {statistics.median(stats['skills']):.0f}")
    print(
        f"  errors: {len(stats['errors'])}"
        + (f" first: {stats['errors'][0]}" if stats["errors"] else "")
    )


def check_invariants(url: str, campaign_id: int, kind: str = "pointwise") -> None:
    item = "pair_id" if kind == "pairwise" else "response_id"
    with psycopg.connect(url) as conn:
        over = conn.execute(
            f"SELECT count(*) FROM (SELECT {item} FROM annotation_assignment "
            f"WHERE campaign_id=%s AND status='submitted' GROUP BY {item} "
            "HAVING count(*) > 1) x",
            (campaign_id,),
        ).fetchone()[0]
        twice = conn.execute(
            f"SELECT count(*) FROM (SELECT {item}, rater_id FROM annotation_assignment "
            "WHERE campaign_id=%s GROUP BY 1, 2 HAVING count(*) > 1) x",
            (campaign_id,),
        ).fetchone()[0]
        drift = conn.execute(
            "SELECT count(*) FROM annotation_campaignitem i WHERE campaign_id=%s AND "
            "(i.submitted <> (SELECT count(*) FROM annotation_assignment a WHERE a.item_id=i.id "
            "AND a.status='submitted') OR i.reserved <> (SELECT count(*) FROM "
            "annotation_assignment a WHERE a.item_id=i.id AND a.status='served'))",
            (campaign_id,),
        ).fetchone()[0]
        answers = (
            "annotation_humanpreference"
            if kind == "pairwise"
            else "annotation_humanscore"
        )
        submitted, scores = conn.execute(
            "SELECT (SELECT count(*) FROM annotation_assignment WHERE campaign_id=%s AND "
            f"status='submitted'), (SELECT count(*) FROM {answers} h JOIN "
            "annotation_assignment a ON a.id=h.assignment_id WHERE a.campaign_id=%s)",
            (campaign_id, campaign_id),
        ).fetchone()
    print("\n== invariants")
    print(f"  items with more than k=1 submitted answers: {over}")
    print(f"  (item, rater) served twice: {twice}")
    print(
        f"  items whose counters disagree with their assignments (lock races): {drift}"
    )
    print(f"  submitted assignments {submitted}, answers stored ({answers}) {scores}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "flask-data"))
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--single-items", type=int, default=300)
    parser.add_argument("--raters", type=int, default=20)
    parser.add_argument(
        "--rubric",
        choices=["flask", "1-10"],
        default="flask",
        help="FLASK's 1-5 skills, or three criteria scored 1-10 (no N/A)",
    )
    parser.add_argument(
        "--kind", choices=["pointwise", "pairwise"], default="pointwise"
    )
    parser.add_argument(
        "--pairs", type=int, default=20000, help="pairs sampled (--kind pairwise)"
    )
    parser.add_argument(
        "--workspaces",
        type=int,
        default=3,
        help="raters spread over this many workspaces, each with its own import of "
        "the release and its own campaign (issue 35)",
    )
    parser.add_argument("--workers", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--worker-class",
        default="sync",
        help="gunicorn worker class (sync closes every connection; gthread keeps "
        "connections alive)",
    )
    args = parser.parse_args()
    base_url = os.environ.get("DATABASE_URL", "")
    if not base_url.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL server (postgres://...)")
    url, admin = scratch_database(base_url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")
    server = None
    try:
        setup = prepare(
            Path(args.data), args.raters + 1, args.rubric, args.kind, args.pairs,
            args.workspaces,
        )  # fmt: skip
        print(
            f"rubric: {args.rubric}, kind: {args.kind}, {args.workspaces} workspace(s)"
        )
        tokens, campaigns = setup["tokens"], setup["campaigns"]
        port = free_port()
        env = {**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING"}
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "flaskapp.wsgi",
                "-b",
                f"127.0.0.1:{port}",
                "-w",
                str(args.workers),
                "--threads",
                str(args.threads),
                "--worker-class",
                args.worker_class,
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                httpx.get(f"{base}/login/", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        print(
            f"gunicorn: {args.workers} {args.worker_class} workers x {args.threads} "
            f"threads on {base}"
        )
        # Warm-up: every worker process opens its DB connection.
        asyncio.run(run_phase(base, tokens[-1:], campaigns[-1:], 5, 40, args.kind))
        single = asyncio.run(
            run_phase(
                base,
                tokens[:1],
                campaigns[:1],
                120,
                args.single_items,
                args.kind,
            )
        )
        report("(a) one rater alone", single, 30, None)
        many = asyncio.run(
            run_phase(
                base,
                tokens[1 : args.raters + 1],
                campaigns[1 : args.raters + 1],
                args.seconds,
                None,
                args.kind,
            )
        )
        report(f"(b) {args.raters} concurrent raters, closed loop", many, 250, 150)
        for campaign_id in sorted(set(campaigns)):
            check_invariants(url, campaign_id, args.kind)
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=20)
        drop_database(admin, url)


if __name__ == "__main__":
    main()
