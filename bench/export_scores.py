"""Score export benchmark: `export --format csv|jsonl` of 200,000 scores, on PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/export_scores.py [--repeat 3] [--keep-files]

Creates a scratch database (dropped at the end), migrates it and writes with COPY a
dataset of 1,700 instructions x 15 models = 25,500 responses, with 100,000 human
scores (25,000 responses x 2 raters x 2 skills) and 100,000 judge scores (25,000
responses x 2 skills x 2 samples), 10% of each N/A; and a dataset ten times smaller
(20,000 scores, still several fetch chunks) for the memory comparison. Then measures:

  (a) `export --format csv` and `--format jsonl` of all 200,000 rows to a file,
      in process, median of --repeat runs;
  (b) peak RSS of a separate `manage.py export` process for the small and the large
      dataset (os.wait4), and the peak of Python allocations (tracemalloc) during one
      in-process export of each: flat memory means the large export needs about as
      much as the small one.

Targets: 100,000 scores exported in under 5 s; memory flat (does not grow with rows).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import psycopg

ROOT = Path(__file__).resolve().parent.parent
# A benchmark is a development tool: it runs on the development key unless
# DJANGO_SECRET_KEY is set (flaskapp/secret_key.py).
os.environ.setdefault("FLASK_DEV", "1")
sys.path.insert(0, str(ROOT))

TARGET_SECONDS_PER_100K = 5.0
SKILLS = ("factuality", "readability")
RATIONALE = "The answer is mostly right, but it skips a step; see the second paragraph."


def scratch_database(base_url: str) -> tuple[str, str]:
    name = f"flaskeval_bench_export_{os.getpid()}"
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


def copy_rows(model, columns: list[str], rows) -> None:
    from django.db import connection

    cols = ", ".join(f'"{c}"' for c in columns)
    with connection.cursor() as cursor:
        with cursor.cursor.copy(
            f'COPY "{model._meta.db_table}" ({cols}) FROM STDIN'
        ) as copy:
            for row in rows:
                copy.write_row(row)


def build_dataset(
    *, name: str, instructions: int, models: int, scored: int, raters: list
) -> int:
    """Write a dataset with COPY; return its number of scores (human + judge)."""
    from django.db import transaction

    from annotation.models import (
        Assignment,
        Campaign,
        CampaignItem,
        Dataset,
        HumanScore,
        Instruction,
        Response,
        Skill,
    )
    from annotation.services.rubrics import rubric_get_default
    from judging.models import JudgeRun, JudgeScore

    now = datetime.now(UTC)
    rubric = rubric_get_default()
    skills = [Skill.objects.get(rubric=rubric, key=k).pk for k in SKILLS]
    domains = ["math", "coding", "history", "health", "language"]
    with transaction.atomic():
        dataset = Dataset.objects.create(name=name, rubric=rubric)
        copy_rows(
            Instruction,
            ["dataset_id", "external_id", "text", "reference_answer", "source_task",
             "domain_1", "domain_2", "difficulty", "is_hard", "metadata",
             "instance_rubric", "position"],
            (
                (dataset.pk, str(i + 1), f"Question {i}: explain.", "Ref.", "bench",
                 domains[i % 5], domains[(i + 1) % 5] if i % 3 == 0 else "",
                 i % 5 + 1, i % 10 == 0, "{}", "{}", i)
                for i in range(instructions)
            ),
        )  # fmt: skip
        instruction_ids = list(
            Instruction.objects.filter(dataset=dataset)
            .order_by("position")
            .values_list("pk", flat=True)
        )
        copy_rows(
            Response,
            ["instruction_id", "model_name", "text", "metadata", "created_at"],
            (
                (iid, f"model-{m:02d}", f"Answer of model {m}.", "{}", now)
                for iid in instruction_ids
                for m in range(models)
            ),
        )
        response_ids = list(
            Response.objects.filter(instruction__dataset=dataset)
            .order_by("pk")
            .values_list("pk", flat=True)[:scored]
        )
        campaign = Campaign.objects.create(
            name=f"{name} campaign", dataset=dataset, overlap=len(raters)
        )
        copy_rows(
            CampaignItem,
            ["campaign_id", "response_id", "target", "submitted", "reserved",
             "open_slots", "position"],
            (
                (campaign.pk, rid, len(raters), len(raters), 0, 0, i)
                for i, rid in enumerate(response_ids)
            ),
        )  # fmt: skip
        items = dict(
            CampaignItem.objects.filter(campaign=campaign).values_list(
                "response_id", "pk"
            )
        )
        copy_rows(
            Assignment,
            ["campaign_id", "item_id", "response_id", "rater_id", "status", "reason",
             "served_at", "expires_at", "submitted_at", "skip_reason", "note", "shown_order",
             "critique"],
            (
                (campaign.pk, items[rid], rid, rater.pk, "submitted", "bench", now,
                 now, now, "", "", "", "")
                for rid in response_ids
                for rater in raters
            ),
        )  # fmt: skip
        # Read before the COPY: the connection cannot run a query during one.
        assignment_ids = list(
            Assignment.objects.filter(campaign=campaign).values_list("pk", flat=True)
        )
        copy_rows(
            HumanScore,
            ["assignment_id", "skill_id", "score", "rationale", "created_at",
             "updated_at"],
            (
                (aid, sid, None if (aid + sid) % 10 == 0 else (aid + sid) % 5 + 1,
                 RATIONALE, now, now)
                for aid in assignment_ids
                for sid in skills
            ),
        )  # fmt: skip
        run = JudgeRun.objects.create(
            dataset=dataset, name=f"{name} run", status=JudgeRun.Status.COMPLETED
        )
        copy_rows(
            JudgeScore,
            ["run_id", "response_id", "skill_id", "sample_index", "score",
             "rationale", "created_at"],
            (
                (run.pk, rid, sid, sample,
                 None if (rid + sid + sample) % 10 == 0 else (rid + sample) % 5 + 1,
                 RATIONALE, now)
                for rid in response_ids
                for sid in skills
                for sample in (0, 1)
            ),
        )  # fmt: skip
    return (
        HumanScore.objects.filter(assignment__campaign=campaign).count()
        + JudgeScore.objects.filter(run=run).count()
    )


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def export_once(dataset: str, fmt: str, out: Path) -> float:
    from django.core.management import call_command

    started = time.perf_counter()
    call_command(
        "export",
        dataset=dataset,
        format=fmt,
        out=str(out),
        stderr=open(os.devnull, "w"),
    )
    return time.perf_counter() - started


def subprocess_peak_mb(db_url: str, dataset: str, fmt: str, out: Path) -> float:
    """Peak RSS of a separate `manage.py export` process (its own rusage)."""
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "export", "--dataset", dataset, "--format", fmt,
         "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": db_url},
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"export of {dataset} failed ({proc.returncode})")
    return usage.ru_maxrss / 1024


def traced_peak_mb(dataset: str, fmt: str, out: Path) -> float:
    tracemalloc.start()
    export_once(dataset, fmt, out)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1024 / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep-files", action="store_true")
    args = parser.parse_args()
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        raise SystemExit("set DATABASE_URL=postgres://... (a server to create a db on)")
    db_url, admin = scratch_database(base)
    os.environ["DATABASE_URL"] = db_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")
    try:
        run(db_url, args)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(admin, db_url)


def run(db_url: str, args) -> None:
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    raters = [User.objects.create_user(f"bench-rater-{i}") for i in range(2)]
    t0 = time.perf_counter()
    big = build_dataset(
        name="big", instructions=1700, models=15, scored=25000, raters=raters
    )
    t1 = time.perf_counter()
    small = build_dataset(
        name="small", instructions=250, models=10, scored=2500, raters=raters
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(
        f"setup: {big:,} scores (25,500 responses) written in {t1 - t0:.1f} s; "
        f"small dataset: {small:,} scores"
    )

    out_dir = Path(tempfile.mkdtemp(prefix="export-bench-"))
    rss_before = maxrss_mb()
    print(f"\n(a) export of all {big:,} rows to a file, median of {args.repeat}")
    for fmt in ("csv", "jsonl"):
        out = out_dir / f"big.{fmt}"
        times = [export_once("big", fmt, out) for _ in range(args.repeat)]
        median = statistics.median(times)
        lines = sum(1 for _ in out.open("rb"))
        per_100k = median * 100_000 / big
        print(
            f"  {fmt:5}  median {median:5.2f} s  ({', '.join(f'{t:.2f}' for t in times)})"
            f"  {big / median:,.0f} rows/s  {out.stat().st_size / 1e6:.0f} MB, "
            f"{lines:,} lines"
        )
        print(
            f"         per 100,000 scores: {per_100k:.2f} s  (target < "
            f"{TARGET_SECONDS_PER_100K:.0f} s: {TARGET_SECONDS_PER_100K / per_100k:.1f}x "
            f"{'under' if per_100k < TARGET_SECONDS_PER_100K else 'OVER'})"
        )
    print(
        f"  in-process peak RSS growth over the {2 * args.repeat} exports: "
        f"{maxrss_mb() - rss_before:.1f} MB"
    )

    print("\n(b) memory: small vs large export")
    for fmt in ("csv", "jsonl"):
        small_rss = subprocess_peak_mb(db_url, "small", fmt, out_dir / f"s.{fmt}")
        big_rss = subprocess_peak_mb(db_url, "big", fmt, out_dir / f"b.{fmt}")
        small_py = traced_peak_mb("small", fmt, out_dir / f"s.{fmt}")
        big_py = traced_peak_mb("big", fmt, out_dir / f"b.{fmt}")
        print(
            f"  {fmt:5}  process peak RSS: {small:,} rows {small_rss:.1f} MB, "
            f"{big:,} rows {big_rss:.1f} MB (ratio {big_rss / small_rss:.2f}, "
            f"rows x{big / small:.0f})"
        )
        print(
            f"         python allocations peak (tracemalloc): {small_py:.2f} MB vs "
            f"{big_py:.2f} MB (ratio {big_py / small_py:.2f})"
        )
    print(
        f"\ntarget: 100,000 scores in under {TARGET_SECONDS_PER_100K:.0f} s, memory flat "
        "(large/small peak ratio near 1 although the row ratio is "
        f"{big / small:.0f})"
    )
    if not args.keep_files:
        for path in out_dir.iterdir():
            path.unlink()
        out_dir.rmdir()
    else:
        print(f"files kept in {out_dir}")


if __name__ == "__main__":
    main()
