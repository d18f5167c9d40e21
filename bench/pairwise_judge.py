"""Pairwise judge run throughput against the local fake server (500 ms per call).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/pairwise_judge.py [--pairs 5000] [--latency-ms 500] \\
        [--concurrency 64] [--workers 2]

Builds, in a scratch PostgreSQL database, a dataset of `--pairs` instructions with two
responses each and one preference pair per instruction (with a human label, as an
imported preference set would have), then runs a real pairwise judge run over it: both
orders, so 2 x pairs calls, executed by Celery worker processes on Redis, every verdict
parsed, mapped back and stored. Timed from `judge_run_start` to the run's status
turning completed.

    ideal = calls x latency / concurrency        (5,000 pairs: 10,000 x 0.5 / 64 = 78 s)

Target (issue #6): wall time <= 1.2 x ideal at 64 in flight. The script checks that
every call succeeded and that there is exactly one verdict per (pair, order).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import psycopg

ROOT = Path(__file__).resolve().parent.parent
# A benchmark is a development tool: it runs on the development key unless
# DJANGO_SECRET_KEY is set (flaskapp/secret_key.py).
os.environ.setdefault("FLASK_DEV", "1")
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

# The same setup as the pointwise throughput benchmark (fake server, scratch DB).
from judge_throughput import (  # noqa: E402
    free_port,
    scratch_database,
    start_fake_server,
    stop,
)

WORDS = (
    "the answer explains each step and checks the result against the question "
    "while noting one assumption that may not hold in every case"
).split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def build_pairs(n: int, seed: int = 0):
    """A dataset with n instructions, two responses each and one pair per
    instruction (bulk inserts: a few seconds for 5,000 pairs)."""
    from annotation.models import (
        Dataset,
        HumanPreference,
        Instruction,
        PreferencePair,
        Response,
    )
    from annotation.services.rubrics import rubric_get_default

    rng = random.Random(seed)
    dataset = Dataset.objects.create(name="pairwise-bench", rubric=rubric_get_default())
    instructions = Instruction.objects.bulk_create(
        (
            Instruction(
                dataset=dataset,
                external_id=str(i + 1),
                text=f"Question {i + 1}: " + _text(rng, 25),
                position=i,
            )
            for i in range(n)
        ),
        batch_size=2000,
    )
    responses = Response.objects.bulk_create(
        (
            Response(
                instruction=instruction,
                model_name=model,
                text=_text(rng, rng.randint(60, 220)),
            )
            for instruction in instructions
            for model in ("model-x", "model-y")
        ),
        batch_size=2000,
    )
    pairs = PreferencePair.objects.bulk_create(
        (
            PreferencePair(
                dataset=dataset,
                instruction=instructions[i],
                response_1=responses[2 * i],
                response_2=responses[2 * i + 1],
                category=("chat", "reasoning", "safety")[i % 3],
                source="bench",
            )
            for i in range(n)
        ),
        batch_size=2000,
    )
    HumanPreference.objects.bulk_create(
        (
            HumanPreference(
                pair=pair,
                label=rng.choice(("1", "2", "tie")),
                origin=HumanPreference.Origin.IMPORTED,
            )
            for pair in pairs
        ),
        batch_size=2000,
    )
    return dataset


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=5000)
    parser.add_argument("--latency-ms", type=float, default=500)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--workers", type=int, default=2, help="Celery worker processes"
    )
    args = parser.parse_args()
    base_db = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not base_db.startswith("postgres") or not redis_url.startswith("redis"):
        sys.exit("set DATABASE_URL (postgres://...) and REDIS_URL (redis://...)")
    db_url, admin = scratch_database(base_db)
    broker = redis_url.rsplit("/", 1)[0] + "/13"
    os.environ.update(
        {
            "DATABASE_URL": db_url,
            "CELERY_BROKER_URL": broker,
            "REDIS_URL": broker,
            "DJANGO_SETTINGS_MODULE": "flaskapp.settings",
            "JUDGE_DRIVERS_PER_RUN": str(args.workers),
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    from collections import Counter

    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection

    from judging.models import JudgeCall, JudgeRun, PairwiseVerdict
    from judging.selectors.pairwise import pairwise_verdict_counts
    from judging.services.configs import judge_config_create
    from judging.services.runs import judge_run_create_pairwise, judge_run_start

    server = workers = None
    try:
        call_command("migrate", verbosity=0)
        t0 = time.perf_counter()
        dataset = build_pairs(args.pairs)
        print(f"built {args.pairs:,} pairs in {time.perf_counter() - t0:.1f} s")
        user = User.objects.create_user("bench", password="x")
        user.groups.add(Group.objects.get(name="researcher"))
        from flaskapp.workspaces import membership_ensure

        membership_ensure(workspace=dataset.workspace, user=user, role="researcher")
        connection.close()

        import redis

        redis.Redis.from_url(broker).flushdb()
        workers = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "flaskapp",
                "worker",
                "-Q",
                "celery,judge",
                "--pool=prefork",
                f"--concurrency={args.workers}",
                "--prefetch-multiplier=1",
                "--without-gossip",
                "--without-mingle",
                "--loglevel=WARNING",
            ],
            cwd=ROOT,
            env=os.environ.copy(),
            start_new_session=True,
        )
        time.sleep(4)

        port = free_port()
        server = start_fake_server(port, args.latency_ms)
        print(f"fake judge server on http://127.0.0.1:{port}/ (GET /stats)", flush=True)
        config = judge_config_create(
            user=user,
            operator=True,
            name=f"bench-pairwise-{time.monotonic_ns()}",
            base_url=f"http://127.0.0.1:{port}/v1",
            model="fake-judge",
            max_concurrency=args.concurrency,
            timeout_seconds=60,
            price_input_per_m=1,
            price_output_per_m=2,
            is_dev_server=True,
        )
        t0 = time.perf_counter()
        run = judge_run_create_pairwise(config=config, dataset=dataset, user=user)
        created = time.perf_counter() - t0
        calls = run.total_calls
        ideal = calls * args.latency_ms / 1000 / args.concurrency
        print(
            f"{args.pairs:,} pairs in both orders = {calls:,} calls, "
            f"{args.latency_ms:.0f} ms per call, concurrency {args.concurrency}, "
            f"{args.workers} Celery worker processes, PostgreSQL + Redis "
            f"(run created in {created:.1f} s)"
        )
        connection.close()
        t0 = time.perf_counter()
        judge_run_start(run=run, user=user)
        while True:
            status = (
                JudgeRun.objects.filter(pk=run.pk)
                .values_list("status", flat=True)
                .first()
            )
            if status in ("completed", "failed", "cancelled"):
                break
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        succeeded = JudgeCall.objects.filter(run=run, status="succeeded").count()
        failed = JudgeCall.objects.filter(run=run, status="failed").count()
        keys = Counter(
            PairwiseVerdict.objects.filter(run=run).values_list("pair_id", "order")
        )
        counts = pairwise_verdict_counts(run=run)
        import httpx

        stats = httpx.get(f"http://127.0.0.1:{port}/stats", timeout=5).json()
        cached = JudgeCall.objects.filter(run=run, cached=True).count()
        print(
            f"  fake server: {stats.get('requests', '?')} requests, at most "
            f"{stats.get('max_in_flight', '?')} in flight; calls served from the "
            f"cache: {cached}"
        )
        print(f"  ideal {ideal:7.2f} s")
        print(f"  wall  {wall:7.2f} s  ({wall / ideal:.2f} x ideal; target <= 1.2)")
        print(
            f"  run {status}: {succeeded:,} calls succeeded, {failed:,} failed, "
            f"{sum(keys.values()):,} verdicts "
            f"(max {max(keys.values(), default=0)} per pair and order)"
        )
        print(
            "  verdicts (original numbering): "
            + ", ".join(f"{k}: {v:,}" for k, v in counts["by_verdict"].items())
            + "; as shown: "
            + ", ".join(f"{k}: {v:,}" for k, v in counts["by_raw"].items())
        )
        ok = (
            status == "completed"
            and succeeded == calls
            and len(keys) == calls
            and max(keys.values(), default=0) == 1
        )
        if not ok:
            sys.exit("FAILED: not every call ended with exactly one stored verdict")
    finally:
        stop(server)
        stop(workers)
        from django.db import connections

        connections.close_all()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                f'DROP DATABASE IF EXISTS "{urlparse(db_url).path.lstrip("/")}" '
                "WITH (FORCE)"
            )


if __name__ == "__main__":
    main()
