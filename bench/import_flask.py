"""Benchmark: importing the FLASK release through `manage.py import_flask`.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/import_flask.py [--data DIR] [--runs 3]

Needs PostgreSQL. The script creates its own scratch databases (`flaskeval_bench_<pid>`,
migrated once, then cloned as `flaskeval_bench_<pid>_run<N>` for each run, so every
run starts from a fresh, empty, migrated database) and drops them all at the end, even
on failure. The database named in DATABASE_URL is only used for its server and login.

Measured, each `--runs` times, printing every run and the median:
  (a) full import of the current eval set and the 15 model-output files
      (1,740 instructions + 25,500 responses) through `call_command("import_flask")`;
  (b) a re-import of the same files, which must add 0 rows.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
# A benchmark is a development tool: it runs on the development key unless
# DJANGO_SECRET_KEY is set (flaskapp/secret_key.py).
os.environ.setdefault("FLASK_DEV", "1")
DEFAULT_DATA = Path(
    os.environ.get("FLASK_DATA_DIR") or ROOT.parent / "shared" / "flask-data"
)
TARGET_FULL_S = 5.0
TARGET_REIMPORT_S = 3.0
EXPECTED_INSTRUCTIONS = 1740
EXPECTED_RESPONSES = 25500


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help=f"the FLASK release folder (default: {DEFAULT_DATA})",
    )
    parser.add_argument("--runs", type=int, default=3, help="repetitions (default: 3)")
    return parser.parse_args()


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


class Scratch:
    """Creates and drops the benchmark's own databases through the `postgres` database."""

    def __init__(self, url: str):
        import psycopg

        parts = urlsplit(url)
        self.url = url
        self.admin = psycopg.connect(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 5432,
            user=parts.username or "postgres",
            password=parts.password,
            dbname="postgres",
            autocommit=True,
        )
        self.version = self.admin.execute("SHOW server_version").fetchone()[0]
        self.created: list[str] = []  # still to drop
        self.ever: list[str] = []

    def create(self, name: str, template: str | None = None) -> None:
        sql = f'CREATE DATABASE "{name}"' + (
            f' TEMPLATE "{template}"' if template else ""
        )
        self.admin.execute(sql)
        self.created.append(name)
        self.ever.append(name)

    def drop(self, name: str) -> None:
        self.admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self.created:
            self.created.remove(name)

    def drop_all(self) -> None:
        for name in reversed(list(self.created)):
            self.drop(name)
        self.admin.close()


def use_database(name: str) -> None:
    """Point Django's default connection at database `name` (closing the old one)."""
    from django.db import connections

    connections.close_all()
    connections["default"].settings_dict["NAME"] = name


def row_counts() -> tuple[int, int, int]:
    from annotation.models import Instruction, InstructionSkill, Response

    return (
        Instruction.objects.count(),
        Response.objects.count(),
        InstructionSkill.objects.count(),
    )


def timed_import(eval_path: Path, outputs_dir: Path) -> tuple[float, str]:
    from django.core.management import call_command

    out = io.StringIO()
    started = time.perf_counter()
    call_command(
        "import_flask",
        str(eval_path),
        "--outputs",
        str(outputs_dir),
        stdout=out,
        stderr=io.StringIO(),
    )
    return time.perf_counter() - started, out.getvalue()


def verdict(value: float, target: float) -> str:
    ratio = value / target
    return f"target < {target:.0f} s, ratio {ratio:.2f} ({'meets' if ratio < 1 else 'MISSES'} target)"


def main() -> int:
    args = parse_args()
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        print(
            "DATABASE_URL must point to PostgreSQL, e.g. "
            "postgres://postgres@127.0.0.1:5432/postgres",
            file=sys.stderr,
        )
        return 2
    eval_path = args.data / "evaluation_set" / "flask_evaluation.jsonl"
    outputs_dir = args.data / "model_output" / "outputs"
    output_files = sorted(outputs_dir.glob("*.jsonl"))
    if not eval_path.is_file() or not output_files:
        print(
            f"FLASK release not found under {args.data} (use --data DIR)",
            file=sys.stderr,
        )
        return 2

    scratch = Scratch(url)
    template = f"flaskeval_bench_{os.getpid()}"
    full_times: list[float] = []
    re_times: list[float] = []
    added: list[int] = []
    verified: list[tuple[int, int]] = []
    try:
        scratch.create(template)
        # Django reads DATABASE_URL when its settings load: point it at the scratch db.
        os.environ["DATABASE_URL"] = with_database(url, template)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        logging.getLogger("annotation").setLevel(logging.WARNING)
        from django.core.management import call_command

        call_command("migrate", verbosity=0)

        for run in range(1, args.runs + 1):
            name = f"{template}_run{run}"
            use_database(
                "postgres"
            )  # no session may stay on the template while cloning
            scratch.create(name, template=template)
            use_database(name)
            assert row_counts() == (0, 0, 0), "the fresh database is not empty"

            seconds, _ = timed_import(eval_path, outputs_dir)
            full_times.append(seconds)
            before = row_counts()

            seconds, _ = timed_import(eval_path, outputs_dir)
            re_times.append(seconds)
            after = row_counts()
            added.append(sum(after) - sum(before))
            verified.append(after[:2])

            use_database("postgres")
            scratch.drop(name)
    finally:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # Django may not be set up yet
            pass
        scratch.drop_all()

    rows = EXPECTED_INSTRUCTIONS + EXPECTED_RESPONSES
    size_mb = (
        eval_path.stat().st_size + sum(p.stat().st_size for p in output_files)
    ) / 1e6
    full_median = statistics.median(full_times)
    re_median = statistics.median(re_times)
    parts = urlsplit(url)

    print(
        f"FLASK import benchmark: PostgreSQL {scratch.version} at "
        f"{parts.hostname}:{parts.port or 5432}; {args.runs} runs, each on a fresh "
        f"migrated scratch database"
    )
    print(f"scratch databases created and dropped: {', '.join(scratch.ever)}")
    print(
        f"data: {eval_path} + {len(output_files)} files in {outputs_dir} ({size_mb:.1f} MB)"
    )
    print()
    print(
        f"(a) full import: {EXPECTED_INSTRUCTIONS:,} instructions + "
        f"{EXPECTED_RESPONSES:,} responses = {rows:,} rows "
        "(call_command('import_flask', EVAL, '--outputs', DIR))"
    )
    print(
        "    runs:   "
        + ", ".join(f"{t:.2f} s ({rows / t:,.0f} rows/s)" for t in full_times)
    )
    print(
        f"    median: {full_median:.2f} s, {rows / full_median:,.0f} rows/s; "
        f"{verdict(full_median, TARGET_FULL_S)}"
    )
    print("(b) re-import of the same files")
    print("    runs:   " + ", ".join(f"{t:.2f} s" for t in re_times))
    print(
        "    rows added per run: "
        + ", ".join(str(a) for a in added)
        + f" ({'0 as required' if not any(added) else 'NOT 0'})"
    )
    print(f"    median: {re_median:.2f} s; {verdict(re_median, TARGET_REIMPORT_S)}")
    ok_counts = all(v == (EXPECTED_INSTRUCTIONS, EXPECTED_RESPONSES) for v in verified)
    print(
        "verification (counted in the database after each run): "
        + "; ".join(f"{i:,} instructions, {r:,} responses" for i, r in verified)
        + f" ({'as expected' if ok_counts else 'UNEXPECTED'})"
    )
    good = ok_counts and not any(added)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
