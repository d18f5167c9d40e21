"""Judge runs against a faulty endpoint: hangs, rate limits, server errors, bad replies.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/judge_faults.py [--calls 3000] [--latency-ms 300] [--repeat 3]

On a scratch database with the FLASK release, the same judge run (10 models, about
`--calls` calls, 32 in flight, the default 120 s call timeout) is executed by two Celery
worker processes (prefork) against the local fake server, timed from `judge_run_start`
to completion, in three scenarios:

  clean    no faults: the 1x figure;
  hangs    0.5% of requests are never answered (target: <= 1.3 x clean);
  errors   5% 429 (Retry-After 1 s), 5% 500 and 3% unparseable replies
           (target: <= 1.2 x clean).

Every run must end with every call stored (succeeded), exactly one score per key; the
figures are medians of `--repeat` runs. Each run uses a model name of its own, so no
answer comes from the cache.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
# A benchmark is a development tool: it runs on the development key unless
# DJANGO_SECRET_KEY is set (flaskapp/secret_key.py).
os.environ.setdefault("FLASK_DEV", "1")
sys.path.insert(0, str(ROOT))

from bench.judge_throughput import (  # noqa: E402
    bench_environment,
    free_port,
    import_flask_release,
    start_fake_server,
    start_worker,
    stop,
)
from bench.worker_crash import MODELS  # noqa: E402

SCENARIOS = {
    "clean": {},
    "hangs": {"--timeout": 0.005},
    "errors": {"--rate-limit": 0.05, "--server-error": 0.05, "--malformed": 0.03},
}
TARGETS = {"hangs": 1.3, "errors": 1.2}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "flask-data"))
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--latency-ms", type=float, default=300)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    db_url, admin, broker = bench_environment(
        12, JUDGE_DRIVERS_PER_RUN="2", LOG_LEVEL="ERROR"
    )
    import django

    django.setup()
    import psycopg
    import redis
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection

    from judging.models import JudgeCall, JudgeRun, JudgeScore
    from judging.services.configs import judge_config_create
    from judging.services.runs import judge_run_create, judge_run_start

    server = workers = None
    times: dict[str, list[float]] = {}
    try:
        call_command("migrate", verbosity=0)
        dataset = import_flask_release(Path(args.data))
        user = User.objects.create_user("bench", password="x")
        user.groups.add(Group.objects.get(name="researcher"))
        from flaskapp.workspaces import membership_ensure

        membership_ensure(workspace=dataset.workspace, user=user, role="researcher")
        connection.close()
        redis.Redis.from_url(broker).flushdb()
        workers = start_worker(2)
        time.sleep(4)
        print(
            f"~{args.calls} calls per run, {args.latency_ms:.0f} ms per call, "
            f"{args.concurrency} in flight, call timeout 120 s, 2 worker processes; "
            f"median of {args.repeat}\n"
        )
        for _ in range(args.repeat):
            for name, faults in SCENARIOS.items():
                port = free_port()
                server = start_fake_server(
                    port, args.latency_ms, faults=faults, retry_after=1, seed=port
                )
                config = judge_config_create(
                    user=user,
                    operator=True,  # the bench runs as the operator does
                    name=f"faults-{name}-{time.monotonic_ns()}",
                    base_url=f"http://127.0.0.1:{port}/v1",
                    model=f"fake-judge-{time.monotonic_ns()}",
                    max_concurrency=args.concurrency,
                    timeout_seconds=120,
                    is_dev_server=True,
                )
                run = judge_run_create(
                    config=config,
                    dataset=dataset,
                    user=user,
                    models=MODELS,
                    instruction_limit=max(1, args.calls // len(MODELS)),
                )
                connection.close()
                t0 = time.perf_counter()
                judge_run_start(run=run, user=user)
                while True:
                    status = JudgeRun.objects.get(pk=run.pk).status
                    if status != "running":
                        break
                    time.sleep(0.05)
                elapsed = time.perf_counter() - t0
                served = httpx.get(f"http://127.0.0.1:{port}/stats").json()
                keys = Counter(
                    JudgeScore.objects.filter(run=run).values_list(
                        "response_id", "skill_id", "sample_index"
                    )
                )
                calls = JudgeCall.objects.filter(run=run)
                hung_cuts = calls.filter(error_kind="timeout").count()
                attempts = sum(calls.values_list("attempts", flat=True))
                print(
                    f"  {name:6} {elapsed:6.2f} s  run {status}: "
                    f"{calls.filter(status='succeeded').count()}/{run.total_calls} "
                    f"stored, {len(keys)} scores, each once: "
                    f"{bool(keys) and max(keys.values()) == 1}; "
                    f"{served['requests']} requests ({served['by_outcome']}), "
                    f"{attempts} attempts recorded, {hung_cuts} calls ending in a timeout"
                )
                times.setdefault(name, []).append(elapsed)
                stop(server)
                server = None
        print()
        clean = statistics.median(times["clean"])
        print(f"clean   median {clean:6.2f} s  (1.00 x)")
        for name, target in TARGETS.items():
            median = statistics.median(times[name])
            ratio = median / clean
            verdict = "meets" if ratio <= target else "MISSES"
            print(
                f"{name:7} median {median:6.2f} s  ({ratio:.2f} x clean; {verdict} "
                f"the {target} x target)"
            )
    finally:
        stop(server)
        stop(workers)
        from django.db import connections

        connections.close_all()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                f'DROP DATABASE IF EXISTS "{db_url.rsplit("/", 1)[1]}" WITH (FORCE)'
            )


if __name__ == "__main__":
    main()
