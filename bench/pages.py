"""Pages: server time of the researcher's instruction page on the FLASK release.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/6 \\
        .venv/bin/python bench/pages.py [--instructions 20] [--repeat 5] [--keep]

A scratch PostgreSQL database is created, migrated, filled and dropped. The FLASK
release (`FLASK_DATA_DIR`) is imported with the project's command (`manage.py
import_flask EVAL --outputs DIR`): 1,740 instructions with 15 model responses each.
On the first --instructions instructions, every response gets 3 raters' scores (one
pointwise campaign, submitted assignments) and 3 judge runs' scores on each of the
instruction's 3 skills, with rationales, written with COPY (not measured): the page
then shows 15 responses x 3 skills x (3 raters + 3 runs).

Measured, in-process through Django's test client as a researcher (middleware, views,
templates and queries; no network): the instruction page (`/instructions/<id>/`),
plain and with a response filter (judge run, skill, D = 2: previous / next over the
whole dataset), and the dataset's responses page with the same filter. Each figure
is the median over every instruction x --repeat requests, with the number of queries
(which must not vary between instructions). Target: the plain page < 150 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("FLASK_DEV", "1")
sys.path.insert(0, str(ROOT))

from bench.export_scores import copy_rows, drop_database  # noqa: E402
from bench.scale import DEFAULT_DATA, create_database, timed_process, use_database  # noqa: E402

RATERS = 3
RUNS = 3
TARGET_MS = 150.0
RATIONALE = (
    "The response answers the question but skips a step of the argument; the "
    "second paragraph repeats the first."
)


def write_scores(dataset, instructions: int):
    """Campaign, 3 raters' and 3 runs' scores on the first `instructions`
    instructions (COPY). Returns (instruction ids, run ids, researcher)."""
    from django.contrib.auth.models import Group, User
    from django.db import transaction

    from annotation.models import (
        Assignment,
        CampaignItem,
        HumanScore,
        Instruction,
        InstructionSkill,
        Response,
    )
    from annotation.services.campaign_spec import CampaignSpec, ServingPolicy
    from annotation.services.campaigns import campaign_create
    from flaskapp.workspaces import RATER, RESEARCHER, membership_ensure
    from judging.models import JudgeRun, JudgeScore

    now = datetime.now(UTC)
    workspace = dataset.workspace
    researcher = User.objects.create_user("pages-researcher", password="x")
    researcher.groups.add(Group.objects.get(name="researcher"))
    # Members of the dataset's workspace (issue 35), in their roles.
    membership_ensure(workspace=workspace, user=researcher, role=RESEARCHER)
    raters = []
    for k in range(RATERS):
        rater = User.objects.create_user(f"pages-rater-{k}")
        rater.groups.add(Group.objects.get(name="rater"))
        membership_ensure(workspace=workspace, user=rater, role=RATER)
        raters.append(rater)
    chosen = list(
        Instruction.objects.filter(dataset=dataset)
        .order_by("position", "id")
        .values_list("id", flat=True)[:instructions]
    )
    skills_of: dict[int, list[int]] = {}
    for iid, sid in (
        InstructionSkill.objects.filter(instruction_id__in=chosen)
        .order_by("instruction_id", "rank")
        .values_list("instruction_id", "skill_id")
    ):
        skills_of.setdefault(iid, []).append(sid)
    responses = list(
        Response.objects.filter(instruction_id__in=chosen).values_list(
            "pk", "instruction_id"
        )
    )
    instruction_of = dict(responses)

    def score(rid: int, sid: int, salt: int) -> int:
        return (rid * 7 + sid * 3 + salt * 5 + rid // 13) % 5 + 1

    campaign = campaign_create(
        spec=CampaignSpec(
            name="pages bench", dataset=dataset, serving=ServingPolicy(overlap=RATERS)
        ),
        created_by=researcher,
    )
    with transaction.atomic():
        items = dict(
            CampaignItem.objects.filter(
                campaign=campaign, response_id__in=instruction_of
            ).values_list("response_id", "pk")
        )
        copy_rows(
            Assignment,
            ["campaign_id", "item_id", "response_id", "rater_id", "status", "reason",
             "served_at", "expires_at", "submitted_at", "skip_reason", "note",
             "shown_order", "critique", "gold", "answers_shown"],
            (
                (campaign.pk, items[rid], rid, rater.pk, "submitted", "bench", now,
                 now, now, "", "", "", "", False, False)
                for rid in instruction_of
                for rater in raters
            ),
        )  # fmt: skip
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
                (aid, sid, score(rid, sid, rater), RATIONALE, now, now)
                for aid, rid, rater in assignments
                for sid in skills_of.get(instruction_of[rid], [])
            ),
        )  # fmt: skip
        runs = []
        for k in range(RUNS):
            run = JudgeRun.objects.create(
                dataset=dataset,
                name=f"pages bench judge {k} (synthetic)",
                kind=JudgeRun.Kind.IMPORTED,
                status=JudgeRun.Status.COMPLETED,
            )
            runs.append(run.pk)
            copy_rows(
                JudgeScore,
                ["run_id", "response_id", "skill_id", "sample_index", "score",
                 "rationale", "created_at"],
                (
                    (run.pk, rid, sid, 0, score(rid, sid, 10 + k), RATIONALE, now)
                    for rid, iid in responses
                    for sid in skills_of.get(iid, [])
                ),
            )  # fmt: skip
    return chosen, runs, researcher, skills_of


def measure(client, urls: list[str], repeat: int) -> tuple[float, set[int]]:
    """Median milliseconds over every url x repeat, and the query counts seen."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times, counts = [], set()
    for url in urls:
        client.get(url)  # warm: templates compiled, connection open
        for _ in range(repeat):
            with CaptureQueriesContext(connection) as ctx:
                t0 = time.perf_counter()
                response = client.get(url)
                times.append((time.perf_counter() - t0) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"{url}: status {response.status_code}")
            counts.add(len(ctx.captured_queries))
    return statistics.median(times), counts


@contextlib.contextmanager
def release_database(data: Path, *, keep: bool = False):
    """A scratch PostgreSQL database on DATABASE_URL's server, migrated, with the FLASK
    release at `data` imported as dataset "flask" by the project's command (`manage.py
    import_flask`, timed and printed). Sets Django up first. Yields the dataset; the
    database is dropped on exit unless `keep` (then its URL is printed). Exits with a
    message when DATABASE_URL is not PostgreSQL or the release is missing."""
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        sys.exit("set DATABASE_URL (postgres://...)")
    if not (data / "evaluation_set" / "flask_evaluation.jsonl").exists():
        sys.exit(f"FLASK release not found at {data} (set FLASK_DATA_DIR)")
    os.environ.update(
        {"DJANGO_SETTINGS_MODULE": "flaskapp.settings", "LOG_LEVEL": "WARNING"}
    )
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    from annotation.models import Dataset

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    url, admin_url = create_database(base, 1)
    try:
        use_database(url)
        call_command("migrate", verbosity=0)
        seconds, _ = timed_process(
            ["import_flask",
             str(data / "evaluation_set" / "flask_evaluation.jsonl"),
             "--outputs", str(data / "model_output" / "outputs"),
             "--dataset", "flask"]
        )  # fmt: skip
        print(f"FLASK release imported in {seconds:.1f} s")
        yield Dataset.objects.get(name="flask")
    finally:
        connections.close_all()
        if keep:
            print(f"kept {url}")
        else:
            drop_database(admin_url, url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--instructions", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    with release_database(args.data, keep=args.keep) as dataset:
        from django.db import connection
        from django.test import Client

        from annotation.models import Skill

        chosen, runs, researcher, skills_of = write_scores(dataset, args.instructions)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        client = Client()
        client.force_login(researcher)
        skill = Skill.objects.get(pk=skills_of[chosen[0]][0]).key
        pages = [f"/instructions/{iid}/" for iid in chosen]
        query = f"?run={runs[0]}&skill={skill}&disagree=2"
        print(
            f"{len(chosen)} instructions x 15 responses x 3 skills x "
            f"({RATERS} raters + {RUNS} runs); median of "
            f"{len(chosen) * args.repeat} requests each:"
        )
        for label, urls, target in (
            ("instruction page", pages, TARGET_MS),
            ("instruction page, response filter", [p + query for p in pages], None),
            (
                "responses page, same filter",
                [f"/datasets/{dataset.pk}/responses/{query}"],
                None,
            ),
        ):
            ms, counts = measure(client, urls, args.repeat)
            verdict = ""
            if target is not None:
                verdict = (
                    f"  target < {target:.0f} ms: {'ok' if ms < target else 'MISSED'}"
                )
            print(f"  {label:40} {ms:7.1f} ms, queries {sorted(counts)}{verdict}")


if __name__ == "__main__":
    main()
