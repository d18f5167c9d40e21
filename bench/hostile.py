"""Hostile requests against the web tier while raters work (issue 34).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
    REDIS_URL=redis://127.0.0.1:6379/8 CELERY_BROKER_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python bench/hostile.py [--raters 20] [--rater-interval 0.5]

Creates a scratch database (dropped at the end) and writes with COPY the synthetic
data of `bench/agreement_dashboard.py` (labelled so: dataset "agreement-bench",
700 instructions x 12 models, 96,000 human and 100,800 judge scores), a rating
campaign over the same responses for `--raters` synthetic raters with API tokens,
and a researcher and an admin. Starts gunicorn as the project deploys it (the
Dockerfile's ``-w 4 --threads 4``) on PostgreSQL with the cache and the throttle
counters in Redis, and one Celery worker (``nice``: background work yields the CPU
to the web tier on this shared 2-core machine).

Then the raters loop for the whole run (each: next, submit, a pause of
``--rater-interval`` s between requests: 20 raters make about 40 requests/s), and
each attack is replayed in turn. Per attack it prints the answers' statuses, the
slowest answer in seconds, the largest growth of a gunicorn worker's resident memory
(``VmRSS`` of /proc/<pid>/status, before and after), whether a worker was killed
(its pid gone, or "WORKER TIMEOUT" in gunicorn's log) and the raters' median and
p95 during the attack (its window lasts at least 3 s). Targets (issue 34): each
hostile request answered (400, 413 or 429; a job's 202) within 5 s, worker memory
growth < 200 MB, no worker killed, the raters' p95 < 500 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import io
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlparse

import httpx

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("FLASK_DEV", "1")
sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    API,
    HttpClient,
    answer_of,
    free_port,
    percentile,
)
from bench.export_scores import drop_database, scratch_database  # noqa: E402

TARGET_SECONDS, TARGET_RSS_MB, TARGET_P95_MS = 5.0, 200.0, 500.0
MIN_WINDOW = 3.0
PASSWORD = "bench-hostile-password-1"


# --- data ------------------------------------------------------------------------------


def prepare(raters: int) -> dict:
    """Migrate; the agreement bench's synthetic data; the raters' campaign; users."""
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import Ability, Skill
    from annotation.services.campaign_spec import CampaignSpec, ServingPolicy
    from annotation.services.campaigns import campaign_create
    from annotation.services.rubrics import rubric_get_default
    from bench.agreement_dashboard import build, synthesize
    from flaskapp.tokens import token_create

    call_command("migrate", verbosity=0)
    skills = list(
        Skill.objects.filter(rubric=rubric_get_default()).order_by("position")
    )
    del Ability
    t0 = time.perf_counter()

    def user(name: str, role: str) -> User:
        u = User.objects.create_user(name, password=PASSWORD)
        u.groups.add(Group.objects.get(name=role))
        return u

    scorers = [user(f"synthetic-scorer-{k}", "rater") for k in range(3)]
    dataset, scored, run = build(skills, synthesize([s.key for s in skills]), scorers)
    researcher = user("bench-researcher", "researcher")
    admin = user("bench-admin", "admin")
    users = [user(f"synthetic-rater-{i}", "rater") for i in range(raters)]
    campaign = campaign_create(
        spec=CampaignSpec(
            name="hostile bench (synthetic raters)",
            dataset=dataset,
            raters=users,
            serving=ServingPolicy(overlap=1),
        ),
        created_by=researcher,
    )
    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    out = {
        "dataset_id": dataset.pk,
        "scored_campaign_id": scored.pk,
        "campaign_id": campaign.pk,
        "rater_tokens": [token_create(user=u).token for u in users],
        "researcher_token": token_create(user=researcher).token,
        "admin_token": token_create(user=admin).token,
    }
    print(
        f"setup: synthetic dataset {dataset.pk} (96,000 human and 100,800 judge "
        f"scores), rating campaign of {campaign.items.count()} items for {raters} "
        f"raters, in {time.perf_counter() - t0:.1f} s"
    )
    connection.close()
    return out


# --- processes -------------------------------------------------------------------------


def start_services(env: dict, port: int, log: Path) -> tuple:
    out = log.open("wb")
    web = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "flaskapp.wsgi", "-b", f"127.0.0.1:{port}",
         "-w", "4", "--threads", "4", "--log-level", "info"],
        cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    worker = subprocess.Popen(
        ["nice", "-n", "10", sys.executable, "-m", "celery", "-A", "flaskapp",
         "worker", "-Q", "celery,judge", "--pool=prefork", "--concurrency=1",
         "--prefetch-multiplier=1", "--without-gossip", "--without-mingle",
         "--loglevel=WARNING", "-n", f"hostile-{os.getpid()}@%h"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    for _ in range(150):
        try:
            httpx.get(f"{base}/login/", timeout=2)
            break
        except httpx.HTTPError:
            time.sleep(0.2)
    return web, worker, base


def stop(proc) -> None:
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def worker_pids(master: int) -> list[int]:
    try:
        text = Path(f"/proc/{master}/task/{master}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def rss_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else None


# --- the raters -------------------------------------------------------------------------


class Raters:
    """`n` raters in a paced loop on their own event loop thread; every request's
    (end time, latency, status) is kept."""

    def __init__(self, base: str, tokens: list[str], campaign_id: int, interval: float):
        self.base, self.tokens, self.campaign_id = base, tokens, campaign_id
        self.interval = interval
        self.samples: list[tuple[float, float, int]] = []
        self.stopping = False
        self.thread = threading.Thread(target=lambda: asyncio.run(self._all()))

    async def _one(self, token: str) -> None:
        parts = urlparse(self.base)
        client = HttpClient(parts.hostname, parts.port, token)
        next_path, submit_path = API["pointwise"]
        try:
            while not self.stopping:
                t = time.perf_counter()
                status, raw = await client.post(next_path.format(self.campaign_id))
                self.samples.append(
                    (time.perf_counter(), time.perf_counter() - t, status)
                )
                await asyncio.sleep(self.interval)
                if status != 200 or not (a := json.loads(raw).get("assignment")):
                    continue
                answer, _ = answer_of("pointwise", a)
                t = time.perf_counter()
                status, _ = await client.post(
                    submit_path.format(a["id"]), json.dumps(answer).encode()
                )
                self.samples.append(
                    (time.perf_counter(), time.perf_counter() - t, status)
                )
                await asyncio.sleep(self.interval)
        finally:
            await client.close()

    async def _all(self) -> None:
        await asyncio.gather(*(self._one(t) for t in self.tokens))

    def window(self, start: float, end: float) -> dict:
        ms = [lat * 1000 for t, lat, _ in self.samples if start <= t <= end]
        bad = sum(1 for t, _, s in self.samples if start <= t <= end and s != 200)
        return {
            "n": len(ms),
            "median": statistics.median(ms) if ms else float("nan"),
            "p95": percentile(ms, 95),
            "errors": bad,
        }


# --- the attacks --------------------------------------------------------------------------


def _upload(name: str, data: bytes) -> dict:
    return {"file": (name, io.BytesIO(data), "application/octet-stream")}


def attacks(s: dict) -> list[tuple]:
    """(name, concurrency, client name, request(client, i) -> response) per attack."""
    ds = s["dataset_id"]
    deep_array = b"[" * 200_000 + b"]" * 200_000
    newlines = gzip.compress(b"\n" * 140_000_000, 9)
    bomb = gzip.compress(b"\0" * 1_000_000_000, 9)
    gold = gzip.compress(
        ("response_id,factuality,nonsense_a,nonsense_b\n" + "x,4,1,2\n" * 300_000)
        .encode(), 9
    )  # fmt: skip
    criteria = [
        {"key": f"criterion_{k}", "name": f"Criterion {k}", "anchors": {
            str(v): f"Anchor {v} of criterion {k}: " + "words " * 12 for v in range(1, 6)}}
        for k in range(390)
    ]  # fmt: skip
    big_rubric = json.dumps({"name": "big", "criteria": criteria}).encode()
    deep_yaml = b"name: deep\ncriteria: " + b"- " * 20_000 + b"x\n"
    huge_int = f'{{"name": "int", "dataset": {ds}, "overlap": {"9" * 5000}}}'
    guidelines = json.dumps(
        {"name": "guide", "dataset": ds, "guidelines": "g" * 5_000_000}
    )
    sizes = {"gold": len(gold), "newlines": len(newlines), "bomb": len(bomb),
             "rubric": len(big_rubric)}  # fmt: skip
    print("payloads: " + ", ".join(f"{k} {v / 1024:.0f} KB" for k, v in sizes.items()))
    api, admin = "api", "admin"
    return [
        ("gold upload, many problems (gzip)", 1, api, lambda c, i: c.post(
            f"/api/datasets/{ds}/gold/import/", files=_upload("gold.csv.gz", gold))),
        ("CSV of newlines (gzip)", 1, admin, lambda c, i: c.post(
            "/api/datasets/hostile-newlines/imports/", data={"format": "csv"},
            files={"files": ("rows.csv.gz", newlines)})),
        ("gzip bomb (1 GB of zeros)", 1, admin, lambda c, i: c.post(
            "/api/datasets/hostile-bomb/imports/", data={"format": "jsonl"},
            files={"files": ("rows.jsonl.gz", bomb)})),
        ("200 KB nested JSON array import", 1, admin, lambda c, i: c.post(
            "/api/datasets/hostile-deep/imports/", data={"format": "jsonl"},
            files={"files": ("rows.json", deep_array)})),
        ("deeply nested YAML rubric", 1, admin, lambda c, i: c.post(
            "/api/rubrics/import/", data={"name": "deep yaml"},
            files={"file": ("rubric.yaml", deep_yaml)})),
        (f"{len(big_rubric) // 1024} KB rubric", 1, admin, lambda c, i: c.post(
            "/api/rubrics/import/", data={"name": "big rubric"},
            files={"file": ("rubric.json", big_rubric)})),
        ("5,000-digit integer in a JSON body", 1, api, lambda c, i: c.post(
            "/api/campaigns/", content=huge_int,
            headers={"Content-Type": "application/json"})),
        ("5 MB guidelines text", 1, api, lambda c, i: c.post(
            "/api/campaigns/", content=guidelines,
            headers={"Content-Type": "application/json"})),
        ("agreement API n_boot=10000", 1, api, lambda c, i: c.get(
            f"/api/datasets/{ds}/agreement/", params={"n_boot": 10000})),
        ("agreement page n_boot=10000", 1, "page", lambda c, i: c.get(
            f"/agreement/{ds}/", params={"n_boot": 10000})),
        ("report page n_boot=10000 (a job)", 1, "page", lambda c, i: c.get(
            f"/report/{ds}/", params={"download": 1, "n_boot": 10000})),
        ("report API n_boot=10000 (a job)", 1, api, lambda c, i: c.post(
            f"/api/datasets/{ds}/report/", json={"n_boot": 10000, "seed": 1})),
        ("rater models of 96,000 scores (a job)", 1, api, lambda c, i: c.get(
            f"/api/campaigns/{s['scored_campaign_id']}/rater-models/",
            params={"model": "glad"})),
        # the admin's: the researcher's job slots are held by the reports above, and
        # these should reach the agreement's own job path (a 202 each, then 429s)
        ("16 concurrent agreement API n_boot=1000", 16, admin, lambda c, i: c.get(
            f"/api/datasets/{ds}/agreement/", params={"n_boot": 1000, "seed": 100 + i})),
        ("16 concurrent agreement API, default n_boot", 16, admin, lambda c, i: c.get(
            f"/api/datasets/{ds}/agreement/", params={"seed": 200 + i})),
        ("16 concurrent agreement pages, default n_boot", 16, "page", lambda c, i: c.get(
            f"/agreement/{ds}/", params={"seed": 300 + i})),
        ("16 concurrent reports (jobs)", 16, api, lambda c, i: c.post(
            f"/api/datasets/{ds}/report/", json={"n_boot": 1000, "seed": 400 + i})),
    ]  # fmt: skip


def clients(base: str, s: dict) -> dict:
    def token(t: str) -> httpx.Client:
        return httpx.Client(base_url=base, timeout=300,
                            headers={"Authorization": f"Token {t}",
                                     "Accept": "application/json"})  # fmt: skip

    page = httpx.Client(base_url=base, timeout=300, follow_redirects=False)
    page.get("/login/")
    page.post(
        "/login/",
        data={"username": "bench-researcher", "password": PASSWORD,
              "csrfmiddlewaretoken": page.cookies["csrftoken"]},
        headers={"Referer": f"{base}/login/"},
    )  # fmt: skip
    return {"api": token(s["researcher_token"]), "admin": token(s["admin_token"]),
            "page": page}  # fmt: skip


def run_attack(name, concurrency, who, request, cl, master, log: Path, raters):
    before = {p: rss_mb(p) for p in worker_pids(master)}
    log_before = log.stat().st_size
    start = time.perf_counter()

    def one(i):
        t = time.perf_counter()
        try:
            r = request(cl[who], i)
            return r.status_code, time.perf_counter() - t
        except httpx.HTTPError as exc:
            return type(exc).__name__, time.perf_counter() - t

    with ThreadPoolExecutor(concurrency) as pool:
        answers = list(pool.map(one, range(concurrency)))
    end = time.perf_counter()
    time.sleep(max(0.0, MIN_WINDOW - (end - start)))
    after = {p: rss_mb(p) for p in worker_pids(master)}
    with log.open("rb") as f:
        f.seek(log_before)
        new_log = f.read().decode(errors="replace")
    growth = max(
        ((after[p] or 0) - (before[p] or 0) for p in before if p in after), default=0
    )
    killed = [p for p in before if p not in after] or (
        ["timeout"] if "WORKER TIMEOUT" in new_log else []
    )
    window = raters.window(start, max(end, start + MIN_WINDOW))
    codes: dict = {}
    for status, _ in answers:
        codes[status] = codes.get(status, 0) + 1
    slowest = max(sec for _, sec in answers)
    fastest_refusal = [sec for st, sec in answers if st in (400, 413, 429, 202, 302)]
    return {
        "name": name, "codes": codes, "slowest": slowest,
        "refused_max": max(fastest_refusal) if fastest_refusal else None,
        "growth": growth, "killed": killed, "raters": window,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--raters", type=int, default=20)
    ap.add_argument("--rater-interval", type=float, default=0.5)
    ap.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = ap.parse_args()
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)
    base_url = os.environ.get("DATABASE_URL", "")
    if not base_url.startswith("postgres") or not os.environ.get("REDIS_URL"):
        sys.exit("set DATABASE_URL (postgres://...), REDIS_URL and CELERY_BROKER_URL")
    url, admin_url = scratch_database(base_url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")
    os.environ.setdefault("CELERY_BROKER_URL", os.environ["REDIS_URL"])
    # Each run its own cache namespace: no result of an earlier run is served.
    os.environ["FLASK_CACHE_KEY_PREFIX"] = f"hostile-{os.getpid()}"
    web = worker = raters = None
    log = ROOT / "var" / f"hostile-gunicorn-{os.getpid()}.log"
    log.parent.mkdir(exist_ok=True)
    try:
        s = prepare(args.raters)
        env = {**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING"}
        web, worker, base = start_services(env, free_port(), log)
        time.sleep(2)
        master = web.pid
        print(f"gunicorn: 4 gthread workers x 4 threads (the Dockerfile's), pids "
              f"{worker_pids(master)}; a Celery worker (nice 10); cache: Redis")  # fmt: skip
        cl = clients(base, s)
        plan = attacks(s)
        raters = Raters(base, s["rater_tokens"][: args.raters], s["campaign_id"],
                        args.rater_interval)  # fmt: skip
        raters.thread.start()
        time.sleep(5)  # warm-up: every worker opens its connections
        t = time.perf_counter()
        time.sleep(10)
        quiet = raters.window(t, time.perf_counter())
        print(f"\nraters alone ({args.raters}, a request every {args.rater_interval} s "
              f"each): n={quiet['n']} median {quiet['median']:.0f} ms, p95 "
              f"{quiet['p95']:.0f} ms, errors {quiet['errors']}")  # fmt: skip
        header = (f"{'attack':42s} {'answers':22s} {'slowest':>8s} {'RSS+':>7s} "
                  f"{'killed':>6s} {'raters p50/p95 ms':>18s}  ok")  # fmt: skip
        print("\n" + header + "\n" + "-" * len(header))
        results = []
        for name, conc, who, request in plan:
            r = run_attack(name, conc, who, request, cl, master, log, raters)
            codes = " ".join(f"{k}x{v}" for k, v in sorted(r["codes"].items(), key=str))
            ok = (
                all(k in (400, 413, 429, 202, 302, 200) for k in r["codes"])
                and (r["refused_max"] or 0) <= TARGET_SECONDS
                and r["growth"] < TARGET_RSS_MB
                and not r["killed"]
                and r["raters"]["p95"] < TARGET_P95_MS
            )
            r["ok"] = ok
            results.append(r)
            w = r["raters"]
            print(f"{name[:42]:42s} {codes[:22]:22s} {r['slowest']:7.2f}s "
                  f"{r['growth']:5.0f}MB {('yes' if r['killed'] else 'no'):>6s} "
                  f"{w['median']:8.0f}/{w['p95']:<8.0f}  {'yes' if ok else 'NO'}")  # fmt: skip
        raters.stopping = True
        raters.thread.join(timeout=30)
        everything = raters.window(0, time.perf_counter())
        print(f"\nraters over the whole run: n={everything['n']} median "
              f"{everything['median']:.0f} ms, p95 {everything['p95']:.0f} ms, "
              f"errors {everything['errors']}")  # fmt: skip
        from analysis.models import Job

        jobs = [f"{j.kind} {j.params} {j.status} ({j.progress_done}/{j.progress_total})"
                for j in Job.objects.order_by("pk")]  # fmt: skip
        print(f"jobs ({len(jobs)}): " + "; ".join(jobs))
        print("gunicorn workers at the end:", worker_pids(master),
              "RSS MB:", [round(rss_mb(p) or 0) for p in worker_pids(master)])  # fmt: skip
        print("'WORKER TIMEOUT' in gunicorn's log:", "WORKER TIMEOUT" in log.read_text(
            errors="replace"))  # fmt: skip
        print(f"every attack within the targets: {all(r['ok'] for r in results)}")
    finally:
        if raters is not None:
            raters.stopping = True
        stop(web)
        stop(worker)
        if not args.keep:
            drop_database(admin_url, url)


if __name__ == "__main__":
    main()
