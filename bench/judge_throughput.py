"""Judge run throughput against the local fake server (500 ms per call).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/judge_throughput.py [--calls 2000] [--latency-ms 500]

For each concurrency limit (64, 256) it measures, in one process tree:

  ideal  N x latency / concurrency;
  bare   the `openai` async client with a semaphore, storing nothing (this machine's
         limit: client and server share the 2 cores);
  app    a real judge run: created from the FLASK release in PostgreSQL, executed by
         Celery worker processes on Redis, every result parsed and stored; timed from
         `judge_run_start` to the run's status turning completed.

and the same app run with 10% injected transient errors (429 with Retry-After 0 and
500), where every call must still end stored. Targets (issue #4): app <= 1.2 x ideal at
64 in flight; app <= 1.3 x bare at 256.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_fake_server(
    port: int,
    latency_ms: float,
    errors: float = 0.0,
    *,
    faults: dict[str, float] | None = None,
    retry_after: float = 0,
    seed: int = 1,
) -> subprocess.Popen:
    """`manage.py fake_judge_server` on `port`; `errors` splits evenly into 429s and
    500s, `faults` adds any other `--flag: share` (e.g. {"--timeout": 0.005})."""
    flags = {"--rate-limit": errors / 2, "--server-error": errors / 2, **(faults or {})}
    args = [
        sys.executable,
        "manage.py",
        "fake_judge_server",
        "--port",
        str(port),
        "--latency-ms",
        str(latency_ms),
        "--retry-after",
        str(retry_after),
        "--seed",
        str(seed),
    ]
    for flag, value in flags.items():
        args += [flag, str(value)]
    proc = subprocess.Popen(
        args,
        cwd=ROOT,
        env={**os.environ, "LOG_LEVEL": "WARNING"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    for _ in range(200):
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("fake judge server did not start")


def bench_environment(broker_db: int, **extra: str) -> tuple[str, str, str]:
    """Check DATABASE_URL / REDIS_URL, make a scratch database and point this process
    (and the workers it starts) at it and at Redis db `broker_db`; returns (scratch
    URL, admin URL, broker URL). Call before django.setup()."""
    base_db = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not base_db.startswith("postgres") or not redis_url.startswith("redis"):
        sys.exit("set DATABASE_URL (postgres://...) and REDIS_URL (redis://...)")
    db_url, admin = scratch_database(base_db)
    broker = redis_url.rsplit("/", 1)[0] + f"/{broker_db}"
    os.environ.update(
        {
            "DATABASE_URL": db_url,
            "CELERY_BROKER_URL": broker,
            "REDIS_URL": broker,
            "DJANGO_SETTINGS_MODULE": "flaskapp.settings",
            "LOG_LEVEL": "WARNING",
            **extra,
        }
    )
    return db_url, admin, broker


def stop(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


async def bare_loop(base_url: str, calls: int, concurrency: int, requests) -> float:
    """The floor: AsyncOpenAI + a semaphore, the same prompts, nothing stored."""
    import openai

    # The SDK's aiohttp transport: httpx's pool is several times slower at this
    # concurrency (the same choice judging.llm makes).
    client = openai.AsyncOpenAI(
        base_url=base_url,
        api_key="bench",
        max_retries=0,
        timeout=60,
        http_client=openai.DefaultAioHttpClient(timeout=60),
    )
    semaphore = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        messages, response_format = requests[i % len(requests)]
        extra = {"response_format": response_format} if response_format else {}
        async with semaphore:
            await client.chat.completions.create(
                model="fake-judge",
                messages=messages,
                temperature=0,
                max_tokens=1024,
                **extra,
            )

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    elapsed = time.perf_counter() - t0
    await client.close()
    return elapsed


def import_flask_release(data: Path):
    """Import the FLASK release (eval set and every model-output file) as dataset
    "flask" through the real importer; returns the Dataset. Needs django.setup()."""
    from annotation.models import Dataset
    from annotation.services.imports import dataset_import_files

    eval_set = data / "evaluation_set/flask_evaluation.jsonl"
    dataset_import_files(
        dataset_name="flask", fmt="flask", files=[("e.jsonl", eval_set.read_bytes())]
    )
    dataset_import_files(
        dataset_name="flask",
        fmt="flask_outputs",
        files=[
            (p.name, p.read_bytes())
            for p in sorted((data / "model_output/outputs").glob("*.jsonl"))
        ],
    )
    return Dataset.objects.get(name="flask")


def start_worker(
    concurrency: int, extra_args: tuple[str, ...] = (), quiet: bool = False
) -> subprocess.Popen:
    """One Celery worker process (prefork, as docker-compose runs it) on this
    process's environment, in a session of its own (so it can be killed as a group)."""
    quiet_output = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    return subprocess.Popen(
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
            f"--concurrency={concurrency}",
            "--prefetch-multiplier=1",
            "--without-gossip",
            "--without-mingle",
            "--loglevel=WARNING",
            *extra_args,
        ],
        cwd=ROOT,
        env=os.environ.copy(),
        start_new_session=True,
        **(quiet_output if quiet else {}),
    )


def scratch_database(base_url: str) -> tuple[str, str]:
    name = f"flaskeval_bench_judge_{os.getpid()}"
    parts = urlparse(base_url)
    admin = urlunparse(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunparse(parts._replace(path=f"/{name}")), admin


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "flask-data"))
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=500)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    parser.add_argument(
        "--workers", type=int, default=2, help="Celery worker processes"
    )
    parser.add_argument("--skip-errors", action="store_true")
    args = parser.parse_args()
    base_db = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not base_db.startswith("postgres") or not redis_url.startswith("redis"):
        sys.exit("set DATABASE_URL (postgres://...) and REDIS_URL (redis://...)")
    db_url, admin = scratch_database(base_db)
    broker = redis_url.rsplit("/", 1)[0] + "/14"
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
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import Skill
    from judging.models import JudgeCall, JudgeRun, JudgeScore
    from judging.services.configs import judge_config_create
    from judging.services.execution.store import load_contexts
    from judging.services.runs import judge_run_create, judge_run_start

    server = workers = None
    try:
        call_command("migrate", verbosity=0)
        dataset = import_flask_release(Path(args.data))
        models = [
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
        limit = args.calls // len(models)
        user = User.objects.create_user("bench", password="x")
        user.groups.add(Group.objects.get(name="researcher"))
        from flaskapp.workspaces import membership_ensure

        membership_ensure(workspace=dataset.workspace, user=user, role="researcher")
        connection.close()

        import redis

        redis.Redis.from_url(broker).flushdb()
        workers = start_worker(args.workers)
        time.sleep(4)

        print(
            f"{args.calls} calls, {args.latency_ms:.0f} ms per call, "
            f"{args.workers} Celery worker processes, PostgreSQL + Redis\n"
        )
        scenarios = [(c, 0.0) for c in args.concurrency]
        if not args.skip_errors:
            scenarios += [(c, 0.10) for c in args.concurrency]
        bare_times: dict[int, float] = {}
        for concurrency, errors in scenarios:
            port = free_port()
            server = start_fake_server(port, args.latency_ms, errors)
            base = f"http://127.0.0.1:{port}/v1"
            config = judge_config_create(
                user=user,
                operator=True,
                name=f"bench-{concurrency}-{errors}-{time.monotonic_ns()}",
                base_url=base,
                model="fake-judge",
                max_concurrency=concurrency,
                timeout_seconds=60,
                price_input_per_m=1,
                price_output_per_m=2,
                is_dev_server=True,
            )
            run = judge_run_create(
                config=config,
                dataset=dataset,
                user=user,
                models=models,
                instruction_limit=limit,
            )
            calls = run.total_calls
            ideal = calls * args.latency_ms / 1000 / concurrency
            if errors == 0.0:
                # The very prompts the app sends for this run's calls.
                ids = list(
                    JudgeCall.objects.filter(run=run).values_list("pk", flat=True)
                )
                skills = list(Skill.objects.filter(rubric_id=dataset.rubric_id))
                contexts = load_contexts(run, "bench", ids, skills, config.prompt)
                sample = [(c.messages, c.response_format) for c in contexts]
                bare_times[concurrency] = asyncio.run(
                    bare_loop(base, calls, concurrency, sample)
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
            app = time.perf_counter() - t0
            stored = JudgeCall.objects.filter(run=run, status="succeeded").count()
            failed = JudgeCall.objects.filter(run=run, status="failed").count()
            scores = JudgeScore.objects.filter(run=run).count()
            attempts = sum(
                JudgeCall.objects.filter(run=run).values_list("attempts", flat=True)
            )
            bare = bare_times.get(concurrency)
            label = f"concurrency {concurrency}" + (
                f", {errors:.0%} transient errors" if errors else ""
            )
            print(f"== {label}: {calls} calls")
            print(f"  ideal {ideal:6.2f} s")
            if errors == 0.0 and bare:
                print(f"  bare  {bare:6.2f} s  ({bare / ideal:.2f} x ideal)")
            print(
                f"  app   {app:6.2f} s  ({app / ideal:.2f} x ideal"
                + (f", {app / bare:.2f} x bare" if bare else "")
                + ")"
            )
            print(
                f"  run {status}: {stored} calls stored, {failed} failed, {scores} scores, "
                f"{attempts} HTTP attempts"
            )
            stop(server)
            server = None
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
