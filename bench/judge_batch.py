"""A judge run through the Batch API (issue 36): the app's own overhead beyond the
server's processing time, and its memory.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/judge_batch.py [--calls 100000] [--delay 30] \
        [--batch-lines 5000] [--redis-db 13]

The FLASK release is imported into a scratch database and judged pointwise (every
model's responses, as many samples as `--calls` needs, cut at `--calls`) with
``batch``, against the local fake server in a process of its own, whose batches wait
`--delay` seconds and then answer every line (`judging.fake_batches`), in batches of
`--batch-lines` (`JUDGE_BATCH_LINES`; at most 50,000, OpenAI's limit). The run is
driven in this process (the worker's code: `judge_run_drive`), so its memory is this
process's. Printed:

  wall          from `judge_run_start` to the run completed;
  server        the provider's own time: the union of its batches' windows from
                creation to completion (its clock, whole seconds): the delay plus
                answering the lines;
  overhead      wall - server: what the app spent submitting (rendering, writing and
                uploading the files, creating the batches), polling and storing;
  phases        start to the last batch submitted; the last batch's completion to
                the run completed (reading the files and storing the results);
  split         the driver's own time by step, all batches (timed around the
                driver's methods, in this bench only): submit (rendering, writing
                and uploading the files, creating the batches), poll (asking the
                provider), store (reading the result files and storing), idle
                (waiting for the next poll); steps overlap the server's work, so
                they add up to the wall time, not to the overhead;
  memory        peak RSS, and RSS sampled every second (flat: files are streamed,
                never held whole).

Target (issue 36): overhead under 60 s at 100,000 calls and a 30 s delay. The
server's time is its batches' union, so time the app leaves the provider idle
between batches counts as overhead; on a loaded machine compare "app CPU" too.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("FLASK_DEV", "1")
sys.path.insert(0, str(ROOT))

from bench.judge_throughput import (  # noqa: E402 - after the path is set
    bench_environment,
    free_port,
    import_flask_release,
    stop,
)

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


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def busy_seconds(windows: list[tuple[int, int]]) -> float:
    """The length of the union of the (start, end) windows."""
    total, reach = 0.0, None
    for start, end in sorted(windows):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def time_driver_steps() -> dict[str, float]:
    """Seconds the batch driver spends in each step, summed over its batches: its
    methods wrapped with a timer (this bench's process only). Poll excludes the
    storing it triggers when a batch is final."""
    from judging.services.execution import batch

    spent = {"submit": 0.0, "poll": 0.0, "store": 0.0, "idle": 0.0}
    steps = {
        "_prepare_and_upload": "submit",
        "_submit": "submit",
        "_poll": "poll",
        "_collect": "store",
        "_wait_for_next_poll": "idle",
    }

    def timed(method, step):
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - t
                spent[step] += elapsed
                if step == "store":
                    spent["poll"] -= elapsed

        return wrapper

    for name, step in steps.items():
        setattr(batch.BatchDriver, name, timed(getattr(batch.BatchDriver, name), step))
    return spent


def start_server(port: int, delay: float) -> subprocess.Popen:
    code = (
        "import django; django.setup()\n"
        "from judging.fake_server import FakeServerConfig, run_fake_server\n"
        f"run_fake_server(FakeServerConfig(latency_ms=0, batch_delay_seconds={delay},"
        f" batch_concurrency=256), port={port})\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "LOG_LEVEL": "WARNING"},
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    import httpx

    for _ in range(100):
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    stop(proc)
    sys.exit("the fake server did not start")


def main() -> None:  # noqa: PLR0915 - one scenario, printed step by step
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "flask-data"))
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--delay", type=float, default=30.0, help="server delay (s)")
    parser.add_argument(
        "--batch-lines",
        type=int,
        default=int(os.environ.get("JUDGE_BATCH_LINES", "5000")),
        help="lines of one batch (JUDGE_BATCH_LINES)",
    )
    parser.add_argument(
        "--redis-db", type=int, default=13, help="the Redis db of the cache"
    )
    args = parser.parse_args()
    db_url, admin, _ = bench_environment(
        args.redis_db,
        JUDGE_BATCH_LINES=str(args.batch_lines),
        JUDGE_BATCH_POLL_MIN_SECONDS="1",
        JUDGE_BATCH_POLL_MAX_SECONDS="5",
        CELERY_TASK_ALWAYS_EAGER="0",
    )
    import django

    django.setup()
    import httpx
    import psycopg
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connections
    from django.utils import timezone

    from annotation.models import Instruction
    from flaskapp.workspaces import RESEARCHER, membership_ensure
    from judging.models import JudgeBatch, JudgeCall, JudgeRun, JudgeScore
    from judging.services.configs import judge_config_create
    from judging.services.execution import judge_run_drive
    from judging.services.runs import judge_run_create

    server = None
    try:
        call_command("migrate", verbosity=0)
        t = time.perf_counter()
        dataset = import_flask_release(Path(args.data))
        responses = Instruction.objects.filter(dataset=dataset).count() * len(MODELS)
        print(f"FLASK release imported in {time.perf_counter() - t:.0f} s")
        user = User.objects.create_user("bench", password="x")
        user.groups.add(Group.objects.get(name="researcher"))
        membership_ensure(workspace=dataset.workspace, user=user, role=RESEARCHER)
        port = free_port()
        server = start_server(port, args.delay)
        base = f"http://127.0.0.1:{port}/v1"
        config = judge_config_create(
            user=user,
            operator=True,
            name=f"bench-batch-{time.monotonic_ns()}",
            base_url=base,
            model="fake-judge",
            samples=max(1, -(-args.calls // responses)),
            timeout_seconds=60,
            price_input_per_m=1,
            price_output_per_m=2,
            is_dev_server=True,
        )
        t = time.perf_counter()
        run = judge_run_create(
            config=config,
            dataset=dataset,
            user=user,
            models=MODELS,
            max_calls=args.calls,
            batch=True,
        )
        print(
            f"run {run.pk}: {run.total_calls:,} calls created in "
            f"{time.perf_counter() - t:.0f} s; server delay {args.delay:g} s"
        )
        # Started as `judge_run_start` does, but driven here (its memory is ours).
        now = timezone.now()
        JudgeRun.objects.filter(pk=run.pk).update(
            status="running", started_at=now, heartbeat_at=now
        )
        samples: list[tuple[float, float]] = []
        done = threading.Event()
        t0 = time.perf_counter()

        def sample() -> None:
            while not done.wait(1.0):
                samples.append((time.perf_counter() - t0, rss_mb()))

        sampler = threading.Thread(target=sample, daemon=True)
        rss_before = rss_mb()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu_before = usage.ru_utime + usage.ru_stime
        sampler.start()
        split = time_driver_steps()
        status = judge_run_drive(run_id=run.pk)
        wall = time.perf_counter() - t0
        done.set()
        remote = httpx.get(f"{base}/batches", params={"limit": 100}).json()["data"]
        server_window = busy_seconds(
            [(b["created_at"], b["completed_at"]) for b in remote]
        )
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        cpu_seconds = cpu.ru_utime + cpu.ru_stime - cpu_before
        batches = list(JudgeBatch.objects.filter(run=run).order_by("pk"))
        started = JudgeRun.objects.get(pk=run.pk)
        last_submitted = max(b.submitted_at for b in batches)
        last_completed = max(b["completed_at"] for b in remote)
        finished = started.finished_at.timestamp()
        stored = JudgeCall.objects.filter(run=run, status="succeeded").count()
        scores = JudgeScore.objects.filter(run=run).count()
        stats = httpx.get(f"http://127.0.0.1:{port}/batch_stats").json()
        print(f"run {status}: {stored:,} calls stored, {scores:,} scores")
        print(
            f"  batches {len(batches)} ({', '.join(str(b.lines) for b in batches[:12])}"
            f"{', ...' if len(batches) > 12 else ''} lines); server: {stats['lines_submitted']:,} lines submitted, "
            f"{stats['duplicates']} twice"
        )
        print(f"  wall      {wall:7.1f} s")
        print(f"  server    {server_window:7.1f} s (delay + answering, its clock)")
        print(f"  overhead  {wall - server_window:7.1f} s (target < 60 s)")
        print(f"  app CPU   {cpu_seconds:7.1f} s (this process, while driving)")
        print(
            "  phases    submitted all "
            f"{(last_submitted - started.started_at).total_seconds():.1f} s after start;"
            f" stored all {finished - last_completed:.1f} s after the last batch "
            "completed (whole-second clock)"
        )
        print(
            "  split     "
            + ", ".join(f"{step} {seconds:.1f} s" for step, seconds in split.items())
            + " (the driver's steps, overlapping the server's work)"
        )
        rss = [mb for _, mb in samples] or [rss_mb()]
        print(
            f"  memory    RSS {rss_before:.0f} MB before, {min(rss):.0f}-{max(rss):.0f}"
            f" MB while driving (peak {peak_rss_mb():.0f} MB); every 10 s: "
            + ", ".join(f"{mb:.0f}" for _, mb in samples[::10])
        )
    finally:
        stop(server)
        connections.close_all()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                f'DROP DATABASE IF EXISTS "{db_url.rsplit("/", 1)[1]}" WITH (FORCE)'
            )


if __name__ == "__main__":
    main()
