"""A judge run survives the SIGKILL of its only worker: how fast it resumes.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/worker_crash.py [--calls 510] [--latency-ms 200] [--repeat 3]

On a scratch database with the FLASK release, a run of about `--calls` calls (10 models)
is started on one Celery worker process (prefork, as docker-compose runs it) against the
local fake server; once 40% of its calls are stored the worker's whole process group is
killed with SIGKILL and a new worker is started at once. Measured, per scenario (a plain
worker, and a worker with embedded beat):

  resume    from the kill to the first call stored after it (target: <= 15 s);
  finish    from the kill to the run's completion;
  results   exactly one score per (response, skill, sample) and every call succeeded.

Default leases are kept (3 x the call timeout, at least 120 s): only the drivers'
heartbeats can bring the run back within the target.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

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

TARGET_RESUME_SECONDS = 15.0
MODELS = [
    "alpaca_13b",
    "bard",
    "chatgpt",
    "claude_v1",
    "davinci_003",
    "gpt4",
    "llama2_chat_13b",
    "llama2_chat_70b",
    "vicuna_13b",
    "wizardlm_13b",
]


def start_crash_worker(beat: bool, schedule: Path) -> subprocess.Popen:
    extra = ("--beat", "--schedule", str(schedule)) if beat else ()
    return start_worker(2, extra, quiet=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "flask-data"))
    parser.add_argument("--calls", type=int, default=510)
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    db_url, admin, broker = bench_environment(13)
    import django

    django.setup()
    import psycopg
    import redis
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from judging.models import JudgeCall, JudgeRun, JudgeScore
    from judging.services.configs import judge_config_create
    from judging.services.runs import judge_run_create, judge_run_start

    server = worker = None
    schedule = Path(f"/tmp/flaskeval-bench-beat-{os.getpid()}")
    results: dict[str, list[tuple[float, float]]] = {}
    try:
        call_command("migrate", verbosity=0)
        dataset = import_flask_release(Path(args.data))
        user = User.objects.create_user("bench", password="x")
        user.groups.add(Group.objects.get(name="researcher"))
        port = free_port()
        server = start_fake_server(port, args.latency_ms)
        base = f"http://127.0.0.1:{port}/v1"
        print(
            f"~{args.calls} calls per run, {args.latency_ms:.0f} ms per call, "
            f"{args.concurrency} in flight, 1 worker (prefork, 2 processes) killed "
            f"with SIGKILL at 40%, a new one started at once; {args.repeat} runs each\n"
        )
        for beat in (False, True):
            label = "worker with beat" if beat else "workers only"
            for _ in range(args.repeat):
                redis.Redis.from_url(broker).flushdb()
                connection.close()
                worker = start_crash_worker(beat, schedule)
                config = judge_config_create(
                    user=user,
                    operator=True,  # the bench runs as the operator does
                    name=f"crash-{time.monotonic_ns()}",
                    base_url=base,
                    # A model name of its own: no answer comes from the cache.
                    model=f"fake-judge-{time.monotonic_ns()}",
                    max_concurrency=args.concurrency,
                    timeout_seconds=60,
                    is_dev_server=True,
                )
                run = judge_run_create(
                    config=config,
                    dataset=dataset,
                    user=user,
                    models=MODELS,
                    instruction_limit=max(1, args.calls // len(MODELS)),
                )
                judge_run_start(run=run, user=user)
                while (
                    JudgeCall.objects.filter(run=run, status="succeeded").count()
                    < 0.4 * run.total_calls
                ):
                    time.sleep(0.05)
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
                killed_at = timezone.now()
                at_kill = run.calls.filter(status="succeeded").count()
                t_kill = time.perf_counter()
                worker = start_crash_worker(beat, schedule)
                resume = None
                while True:
                    if resume is None and (
                        JudgeCall.objects.filter(
                            run=run, status="succeeded", finished_at__gt=killed_at
                        ).exists()
                    ):
                        resume = time.perf_counter() - t_kill
                    status = JudgeRun.objects.get(pk=run.pk).status
                    if status != "running":
                        break
                    if time.perf_counter() - t_kill > 600:
                        status = "stalled (gave up after 600 s)"
                        break
                    time.sleep(0.1)
                finish = time.perf_counter() - t_kill
                keys = Counter(
                    JudgeScore.objects.filter(run=run).values_list(
                        "response_id", "skill_id", "sample_index"
                    )
                )
                succeeded = run.calls.filter(status="succeeded").count()
                once = bool(keys) and max(keys.values()) == 1
                print(
                    f"  {label}: run {status}, resumed {resume or float('nan'):5.1f} s "
                    f"after the kill, finished {finish:5.1f} s after; "
                    f"{at_kill} stored at the kill, "
                    f"{succeeded}/{run.total_calls} calls, {len(keys)} scores, "
                    f"each key once: {once}"
                )
                results.setdefault(label, []).append((resume or float("inf"), finish))
                stop(worker)
                worker = None
        print()
        for label, rows in results.items():
            resume = statistics.median(r for r, _ in rows)
            finish = statistics.median(f for _, f in rows)
            verdict = "meets" if resume <= TARGET_RESUME_SECONDS else "MISSES"
            print(
                f"{label}: median resume {resume:.1f} s ({verdict} the "
                f"{TARGET_RESUME_SECONDS:.0f} s target), median finish {finish:.1f} s"
            )
    finally:
        stop(server)
        stop(worker)
        schedule.unlink(missing_ok=True)
        from django.db import connections

        connections.close_all()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                f'DROP DATABASE IF EXISTS "{db_url.rsplit("/", 1)[1]}" WITH (FORCE)'
            )


if __name__ == "__main__":
    main()
