"""Scale: how the cost grows with the work, on PostgreSQL, at 1x and 10x the FLASK release.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/6 \\
        .venv/bin/python bench/scale.py [--scale 1 10] [--skip-judge] [--judge-calls N] [--repeat N] [--keep]

For each scale (1 = the FLASK release, 10 = ten synthetic replicas of it) a scratch
database is created, migrated, used and dropped. Redis: the db of REDIS_URL is the
cache and the Celery broker, and is flushed. Measured:

  import     `manage.py import_flask EVAL --outputs DIR --dataset NAME` as a separate
             process: wall time and peak RSS (os.wait4). At 1x the release files as
             they are (1,740 instructions, 25,500 responses); at 10x temporary files in
             the FLASK format, every instruction and its 15 outputs replicated 10 times
             with the idx offset (replica 3 of 17 is 300017), imported as dataset
             "flask-x10 (synthetic replicas)" (17,400 instructions, 255,000 responses).
             Target < 20 s at 10x, memory flat (10x peak about the 1x one).
  campaign   annotation.services.campaigns.campaign_create over every response, overlap 1
             (target < 5 s at 10x).
  agreement  analysis agreement_compute(n_boot=1000) for that campaign and one judge
             run: cold (empty cache; target < 5 s) and cached (median of 20; target
             < 200 ms). Scores are written with COPY (not measured): judge scores for
             every response x its instruction's 3 skills (765,000 at 10x) and human
             scores by 2 raters x 3 skills (100,000 at 10x).
  export     `manage.py export --format csv` of all scores as a separate process (a
             second imported judge run fills them up to 1,000,000 rows at 10x): wall
             time and peak RSS. Target < 10 s for 1,000,000 rows, memory flat.
  judge      --judge-calls calls at 10x (a tenth at 1x), 256 in flight, against the
             fake server at 200 ms per call: bare AsyncOpenAI loop vs a real run
             executed by Celery prefork workers (target app <= 1.3 x bare).

Every figure is printed with its target, and with the 1x figure and the 10x / 1x
ratio when both scales run; a final table sums up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import psycopg

ROOT = Path(__file__).resolve().parent.parent
# A benchmark is a development tool: it runs on the development key unless
# DJANGO_SECRET_KEY is set (flaskapp/secret_key.py).
os.environ.setdefault("FLASK_DEV", "1")
sys.path.insert(0, str(ROOT))

from bench.export_scores import copy_rows, drop_database  # noqa: E402
from bench.judge_throughput import (  # noqa: E402
    bare_loop,
    free_port,
    start_fake_server,
    start_worker,
    stop,
)
from bench.worker_crash import MODELS  # noqa: E402

DEFAULT_DATA = Path(
    os.environ.get("FLASK_DATA_DIR") or ROOT.parent / "shared" / "flask-data"
)
HUMAN_SCORES_10X = 100_000
EXPORT_ROWS_10X = 1_000_000
RATERS = 2
LATENCY_MS = 200
IN_FLIGHT = 256
FLAT_RATIO = 1.5  # "flat memory": the 10x peak is at most this times the 1x peak

# figure -> (target at 10x or None, unit); "x" targets are "<=", the others "<".
TARGETS = {
    "import s": (20.0, "s"),
    "import peak RSS MB": (None, "MB"),
    "campaign create s": (5.0, "s"),
    "agreement cold s": (5.0, "s"),
    "agreement cached ms": (200.0, "ms"),
    "export s per 1M rows": (10.0, "s"),
    "export peak RSS MB": (None, "MB"),
    "judge bare s": (None, "s"),
    "judge app s": (None, "s"),
    "judge app / bare": (1.3, "x"),
}


def dataset_name(scale: int) -> str:
    return "flask" if scale == 1 else f"flask-x{scale} (synthetic replicas)"


def create_database(base_url: str, scale: int) -> tuple[str, str]:
    name = f"flaskeval_bench_scale{scale}_{os.getpid()}"
    parts = urlparse(base_url)
    admin = urlunparse(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunparse(parts._replace(path=f"/{name}")), admin


def use_database(url: str) -> None:
    """Point Django's default connection (and child processes) at `url`."""
    from django.db import connections

    connections.close_all()
    connections["default"].settings_dict["NAME"] = urlparse(url).path.lstrip("/")
    os.environ["DATABASE_URL"] = url


RSS_WRAPPER = (
    "import resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[2:])\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
    "sys.exit(code)\n"
)


def timed_process(args: list[str]) -> tuple[float, float]:
    """Run `manage.py ARGS` as a child; return (wall seconds, its peak RSS in MB)."""
    t0 = time.perf_counter()
    # stderr goes to a file: the import's warnings can fill a pipe, and wait4 before
    # reading a pipe would then deadlock. The command runs under a small Python
    # wrapper that reports its child's peak RSS: a child forked straight from this
    # process inherits this process's high-water mark (Linux keeps it across exec).
    with tempfile.TemporaryFile() as errors, tempfile.NamedTemporaryFile() as rss:
        proc = subprocess.Popen(
            [sys.executable, "-c", RSS_WRAPPER, rss.name,
             sys.executable, "manage.py", *args],
            cwd=ROOT,
            env={**os.environ, "LOG_LEVEL": "WARNING"},
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )  # fmt: skip
        code = proc.wait()
        elapsed = time.perf_counter() - t0
        if code:
            errors.seek(0)
            raise SystemExit(
                f"manage.py {args[0]} failed ({code}): "
                f"{errors.read().decode(errors='replace')[-2000:]}"
            )
        peak_kb = int(Path(rss.name).read_text())
    return elapsed, peak_kb / 1024


REPLICA_ID = 100_000
# Replica k of instruction idx is idx + k * REPLICA_ID (FLASK ids are integers).


def replicate(data: Path, scale: int, out: Path) -> tuple[Path, Path]:
    """The FLASK release `scale` times over, ids offset by REPLICA_ID, in the FLASK format."""
    eval_src = data / "evaluation_set" / "flask_evaluation.jsonl"
    outputs_src = data / "model_output" / "outputs"
    if scale == 1:
        return eval_src, outputs_src
    eval_dst = out / "flask_evaluation.jsonl"
    outputs_dst = out / "outputs"
    outputs_dst.mkdir()
    rows = [json.loads(line) for line in eval_src.open() if line.strip()]
    with eval_dst.open("w") as f:
        for k in range(scale):
            for row in rows:
                f.write(json.dumps({**row, "idx": REPLICA_ID * k + row["idx"]}) + "\n")
    for src in sorted(outputs_src.glob("*.jsonl")):
        outs = [json.loads(line) for line in src.open() if line.strip()]
        with (outputs_dst / src.name).open("w") as f:
            for k in range(scale):
                for row in outs:
                    qid = REPLICA_ID * k + int(row["question_id"])
                    row = {**row, "question_id": qid}
                    f.write(json.dumps(row) + "\n")
    return eval_dst, outputs_dst


def write_scores(dataset, campaign, raters, scale: int):
    """COPY judge scores (every response x its skills), human scores and an extra run.

    Scores follow a latent quality per (response, skill) so that the statistics are
    not degenerate. Returns (main run, scores written).
    """
    from django.db import transaction

    from annotation.models import (
        Assignment,
        CampaignItem,
        HumanScore,
        InstructionSkill,
        Response,
    )
    from judging.models import JudgeRun, JudgeScore

    now = datetime.now(UTC)
    skills_of: dict[int, list[int]] = {}
    for iid, sid in (
        InstructionSkill.objects.filter(instruction__dataset=dataset)
        .order_by("instruction_id", "rank")
        .values_list("instruction_id", "skill_id")
    ):
        skills_of.setdefault(iid, []).append(sid)
    responses = list(
        Response.objects.filter(instruction__dataset=dataset)
        .order_by("pk")
        .values_list("pk", "instruction_id")
    )

    def quality(rid: int, sid: int) -> int:
        return (rid * 7 + sid * 3 + rid // 13) % 5 + 1

    def shifted(q: int, h: int) -> int | None:
        if h % 31 == 0:
            return None  # N/A
        return min(5, max(1, q + (h % 3) - 1))

    with transaction.atomic():
        run = JudgeRun.objects.create(
            dataset=dataset,
            name="scale bench judge (synthetic)",
            kind=JudgeRun.Kind.IMPORTED,
            status=JudgeRun.Status.COMPLETED,
        )
        copy_rows(
            JudgeScore,
            ["run_id", "response_id", "skill_id", "sample_index", "score",
             "rationale", "created_at"],
            (
                (run.pk, rid, sid, 0, shifted(quality(rid, sid), rid * 5 + sid), "",
                 now)
                for rid, iid in responses
                for sid in skills_of.get(iid, [])
            ),
        )  # fmt: skip
        n_judge = JudgeScore.objects.filter(run=run).count()

        per_response = RATERS * 3
        n_rated = -(-HUMAN_SCORES_10X * scale // 10 // per_response)
        items = list(
            CampaignItem.objects.filter(campaign=campaign)
            .order_by("position")
            .values_list("pk", "response_id")[:n_rated]
        )
        CampaignItem.objects.filter(pk__in=[pk for pk, _ in items]).update(
            target=RATERS, submitted=RATERS, open_slots=0
        )
        copy_rows(
            Assignment,
            ["campaign_id", "item_id", "response_id", "rater_id", "status", "reason",
             "served_at", "expires_at", "submitted_at", "skip_reason", "note",
             "shown_order"],
            (
                (campaign.pk, item, rid, rater.pk, "submitted", "bench", now, now,
                 now, "", "", "")
                for item, rid in items
                for rater in raters
            ),
        )  # fmt: skip
        instruction_of = dict(responses)
        assignments = list(
            Assignment.objects.filter(campaign=campaign).values_list(
                "pk", "response_id", "rater_id"
            )
        )
        copy_rows(
            HumanScore,
            ["assignment_id", "skill_id", "score", "rationale", "created_at",
             "updated_at"],
            (
                (aid, sid, shifted(quality(rid, sid), rid + sid * 11 + rater), "",
                 now, now)
                for aid, rid, rater in assignments
                for sid in skills_of.get(instruction_of[rid], [])
            ),
        )  # fmt: skip
        n_human = HumanScore.objects.filter(assignment__campaign=campaign).count()

        extra = EXPORT_ROWS_10X * scale // 10 - n_judge - n_human
        filler = JudgeRun.objects.create(
            dataset=dataset,
            name="scale bench export filler (synthetic)",
            kind=JudgeRun.Kind.IMPORTED,
            status=JudgeRun.Status.COMPLETED,
        )
        copy_rows(
            JudgeScore,
            ["run_id", "response_id", "skill_id", "sample_index", "score",
             "rationale", "created_at"],
            (
                (filler.pk, rid, sid, 0, quality(rid, sid), "", now)
                for rid, iid in responses[: max(0, extra) // 3]
                for sid in skills_of.get(iid, [])[:3]
            ),
        )  # fmt: skip
        n_filler = JudgeScore.objects.filter(run=filler).count()
    return run, n_judge, n_human, n_filler


def judge_part(dataset, admin, calls: int, workers: int) -> dict[str, float]:
    """Bare client loop vs an app run of `calls` calls at IN_FLIGHT, LATENCY_MS."""
    from django.db import connection

    from annotation.models import Skill
    from judging.models import JudgeCall, JudgeRun
    from judging.services.configs import judge_config_create
    from judging.services.execution.store import load_contexts
    from judging.services.runs import judge_run_create, judge_run_start

    server = worker_proc = None
    try:
        port = free_port()
        server = start_fake_server(port, LATENCY_MS)
        base = f"http://127.0.0.1:{port}/v1"
        config = judge_config_create(
            user=admin,
            name=f"scale-bench-{time.monotonic_ns()}",
            base_url=base,
            model="fake-judge",
            max_concurrency=IN_FLIGHT,
            timeout_seconds=60,
            price_input_per_m=1,
            price_output_per_m=2,
            is_dev_server=True,
        )
        run = judge_run_create(
            config=config, dataset=dataset, user=admin, models=MODELS, max_calls=calls
        )
        calls = run.total_calls
        ids = list(
            JudgeCall.objects.filter(run=run)
            .order_by("pk")
            .values_list("pk", flat=True)[:2000]
        )
        skills = list(Skill.objects.filter(rubric_id=dataset.rubric_id))
        contexts = load_contexts(run, "bench", ids, skills, config.prompt)
        sample = [(c.messages, c.response_format) for c in contexts]
        bare = asyncio.run(bare_loop(base, calls, IN_FLIGHT, sample))
        print(f"  bare loop: {calls:,} calls in {bare:.1f} s")
        connection.close()
        worker_proc = start_worker(workers)
        time.sleep(4)
        t0 = time.perf_counter()
        judge_run_start(run=run, user=admin)
        status = ""
        while time.perf_counter() - t0 < 1800:
            status = (
                JudgeRun.objects.filter(pk=run.pk)
                .values_list("status", flat=True)
                .first()
            )
            if status in ("completed", "failed", "cancelled"):
                break
            time.sleep(0.1)
        app = time.perf_counter() - t0
        stored = JudgeCall.objects.filter(run=run, status="succeeded").count()
        print(
            f"  app run: {status}, {stored:,} of {calls:,} calls stored in {app:.1f} s"
        )
        if stored != calls:
            print("  WARNING: not every call was stored")
        return {
            "judge bare s": bare,
            "judge app s": app,
            "judge app / bare": app / bare,
        }
    finally:
        stop(worker_proc)
        stop(server)


def one_scale(scale: int, args, base_url: str) -> dict[str, float]:
    from django.contrib.auth.models import Group, User
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connection

    from analysis.selectors import agreement as sa
    from annotation.models import Dataset, Instruction, Response
    from annotation.services.campaign_spec import CampaignSpec, ServingPolicy
    from annotation.services.campaigns import campaign_create

    url, admin_url = create_database(base_url, scale)
    figures: dict[str, float] = {}
    tmp = Path(tempfile.mkdtemp(prefix=f"scale-bench-{scale}x-"))
    try:
        use_database(url)
        call_command("migrate", verbosity=0)
        name = dataset_name(scale)
        print(f"\n=== scale {scale}x: dataset {name!r} on {urlparse(url).path[1:]}")
        eval_path, outputs = replicate(args.data, scale, tmp)
        seconds, peak = timed_process(
            ["import_flask", str(eval_path), "--outputs", str(outputs), "--dataset",
             name]
        )  # fmt: skip
        dataset = Dataset.objects.get(name=name)
        n_ins = Instruction.objects.filter(dataset=dataset).count()
        n_resp = Response.objects.filter(instruction__dataset=dataset).count()
        figures["import s"], figures["import peak RSS MB"] = seconds, peak
        print(
            f"import: {n_ins:,} instructions + {n_resp:,} responses in {seconds:.2f} s, "
            f"peak RSS {peak:.0f} MB"
        )

        admin = User.objects.create_superuser("scale-admin", password="x")
        raters = []
        for k in range(RATERS):
            rater = User.objects.create_user(f"scale-rater-{k}")
            rater.groups.add(Group.objects.get(name="rater"))
            raters.append(rater)
        times = []
        campaign = None
        for i in range(args.repeat):
            t0 = time.perf_counter()
            campaign = campaign_create(
                spec=CampaignSpec(
                    name=f"scale bench {i}",
                    dataset=dataset,
                    serving=ServingPolicy(overlap=1),
                ),
                created_by=admin,
            )
            times.append(time.perf_counter() - t0)
        figures["campaign create s"] = statistics.median(times)
        print(
            f"campaign create over {n_resp:,} responses: median "
            f"{figures['campaign create s']:.2f} s ({', '.join(f'{t:.2f}' for t in times)})"
        )

        t0 = time.perf_counter()
        run, n_judge, n_human, n_filler = write_scores(dataset, campaign, raters, scale)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        print(
            f"scores written with COPY (not measured, {time.perf_counter() - t0:.0f} s): "
            f"{n_judge:,} judge, {n_human:,} human, {n_filler:,} filler judge scores"
        )

        kwargs = {
            "dataset": dataset,
            "campaign_ids": [campaign.pk],
            "run_ids": [run.pk],
            "n_boot": 1000,
        }
        times = []
        for _ in range(args.repeat):
            cache.clear()
            t0 = time.perf_counter()
            sa.agreement_compute(**kwargs)
            times.append(time.perf_counter() - t0)
        figures["agreement cold s"] = statistics.median(times)
        cached = []
        for _ in range(20):
            t0 = time.perf_counter()
            sa.agreement_compute(**kwargs)
            cached.append(time.perf_counter() - t0)
        figures["agreement cached ms"] = statistics.median(cached) * 1000
        print(
            f"agreement: cold median {figures['agreement cold s']:.2f} s "
            f"({', '.join(f'{t:.2f}' for t in times)}), cached median "
            f"{figures['agreement cached ms']:.1f} ms of 20"
        )

        connection.close()
        out = tmp / "scores.csv"
        rows = n_judge + n_human + n_filler
        times, peaks = [], []
        for _ in range(args.repeat):
            seconds, peak = timed_process(
                ["export", "--dataset", name, "--format", "csv", "--out", str(out)]
            )
            times.append(seconds)
            peaks.append(peak)
        lines = sum(1 for _ in out.open("rb"))
        figures["export s per 1M rows"] = statistics.median(times) * 1e6 / rows
        figures["export peak RSS MB"] = max(peaks)
        print(
            f"export csv of {rows:,} scores ({lines:,} lines, "
            f"{out.stat().st_size / 1e6:.0f} MB): median {statistics.median(times):.2f} s"
            f" = {figures['export s per 1M rows']:.2f} s per 1,000,000 rows, "
            f"peak RSS {max(peaks):.0f} MB"
        )

        if not args.skip_judge:
            calls = max(1, args.judge_calls * scale // 10)
            print(
                f"judge: {calls:,} calls, {IN_FLIGHT} in flight, {LATENCY_MS} ms each"
            )
            figures.update(judge_part(dataset, admin, calls, args.workers))
    finally:
        from django.db import connections

        connections.close_all()
        if args.keep:
            print(f"kept database {url}")
        else:
            drop_database(admin_url, url)
        for path in sorted(tmp.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        tmp.rmdir()
    return figures


def verdict(key: str, value: float, small: float | None, scale: int) -> str:
    target, unit = TARGETS[key]
    parts = []
    if target is not None and scale == 10:
        ok = value <= target if unit == "x" else value < target
        parts.append(f"target {'<=' if unit == 'x' else '<'} {target:g} {unit}: "
                     f"{'meets' if ok else 'MISSES'}")  # fmt: skip
    if small:
        ratio = value / small
        parts.append(f"1x {small:.2f}, 10x/1x {ratio:.2f}")
        if "RSS" in key:
            parts.append(
                f"flat (<= {FLAT_RATIO}x): {'yes' if ratio <= FLAT_RATIO else 'NO'}"
            )
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scale", type=int, nargs="+", default=[1, 10], choices=[1, 10]
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--skip-judge", action="store_true")
    parser.add_argument(
        "--judge-calls",
        type=int,
        default=100_000,
        help="judge calls at 10x (a tenth of them at 1x); default 100,000",
    )
    parser.add_argument("--workers", type=int, default=2, help="Celery processes")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--keep", action="store_true", help="keep the scratch databases (prints them)"
    )
    args = parser.parse_args()
    base = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not base.startswith("postgres") or not redis_url.startswith("redis"):
        sys.exit("set DATABASE_URL (postgres://...) and REDIS_URL (redis://.../N)")
    os.environ.update(
        {
            "CELERY_BROKER_URL": redis_url,
            "DJANGO_SETTINGS_MODULE": "flaskapp.settings",
            "JUDGE_DRIVERS_PER_RUN": str(args.workers),
            "LOG_LEVEL": "WARNING",
        }
    )
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    import django

    django.setup()
    import logging

    logging.getLogger("annotation").setLevel(logging.WARNING)
    results = {scale: one_scale(scale, args, base) for scale in sorted(args.scale)}

    print("\n=== summary (targets apply at 10x)")
    head = f"{'figure':24} {'target':>10} " + " ".join(
        f"{f'{s}x':>10}" for s in results
    )
    if len(results) == 2:
        head += f" {'10x/1x':>8}"
    print(head)
    for key, (target, unit) in TARGETS.items():
        values = [results[s].get(key) for s in results]
        if all(v is None for v in values):
            continue
        op = "<=" if unit == "x" else "<"
        shown = f"{op} {target:g} {unit}" if target is not None else "-"
        line = f"{key:24} {shown:>10} " + " ".join(
            f"{v:10.2f}" if v is not None else f"{'-':>10}" for v in values
        )
        if len(values) == 2 and None not in values and values[0]:
            line += f" {values[1] / values[0]:8.2f}"
        print(line)
    if 10 in results:
        print()
        for key, value in results[10].items():
            print(
                f"{key}: {value:.2f} ({verdict(key, value, results.get(1, {}).get(key), 10)})"
            )


if __name__ == "__main__":
    main()
