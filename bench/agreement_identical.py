"""The agreement figures of the dashboard bench's synthetic data, dumped as JSON.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/agreement_identical.py --out after.json \\
        [--root /path/to/checkout] [--boot 200] [--scale 1-5]

A refactoring of the agreement code must not change a figure: run this on the
checkout before (``--root``: the code imported, its own ``bench/`` included) and
after, then compare the two files (``cmp before.json after.json``; they are written
with sorted keys off, so the key order of every output is compared too).

It writes the data of ``bench/agreement_dashboard.py`` (700 instructions x 12 models,
12 skills, 96,000 human and 100,800 judge scores) into a scratch database (dropped
at the end) and dumps, for the whole dataset and for the slice difficulty 3:
``agreement_compute``'s result, the API's JSON body, the dashboard's table and
models CSV, the ``agreement`` command's json and table outputs, and the dashboard
page's HTML (compact, full table, radars on all items; its CSRF token blanked) with
every chart inlined in it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="the JSON file to write")
    ap.add_argument(
        "--root",
        default=str(Path(__file__).resolve().parent.parent),
        help="the checkout whose code computes the figures (default: this one)",
    )
    ap.add_argument("--boot", type=int, default=200)
    ap.add_argument("--scale", choices=("1-5", "1-10"), default="1-5")
    args = ap.parse_args()
    root = str(Path(args.root).resolve())
    sys.path.insert(0, root)
    os.chdir(root)
    os.environ.setdefault("FLASK_DEV", "1")
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL server (see the docstring)")
    from bench.export_scores import drop_database, scratch_database

    url, admin = scratch_database(base)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver,localhost,127.0.0.1")
    import django

    django.setup()
    try:
        dump = _dump(args.boot, args.scale)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(admin, url)
    Path(args.out).write_text(json.dumps(dump, indent=1) + "\n")
    print(f"{args.out}: {len(dump)} outputs from {root}")


def _dump(n_boot: int, scale: str) -> dict:
    from django.core.cache import cache
    from django.core.management import call_command
    from django.test import Client
    from django.urls import reverse

    call_command("migrate", verbosity=0)
    from analysis import display
    from analysis.management.commands.agreement import render_table
    from analysis.selectors import agreement as sa
    from annotation.models import Rubric, Skill
    from annotation.services.rubrics import rubric_get_default
    from bench.agreement_dashboard import build, synthesize
    from tests.factories import UserFactory

    rubric = rubric_get_default()
    skills = list(Skill.objects.filter(rubric=rubric).order_by("position"))
    high = int(scale.split("-")[1])
    if high != 5:
        wide = Rubric.objects.create(name=f"FLASK on {scale}")
        for s in skills:
            s.pk, s.rubric, s.scale_max, s.scale_anchors = None, wide, high, {}
        Skill.objects.bulk_create(skills)
        skills = list(Skill.objects.filter(rubric=wide).order_by("position"))
    data = synthesize([s.key for s in skills], high=high)
    raters = [UserFactory(username=f"bench-rater-{k}", role="rater") for k in range(3)]
    researcher = UserFactory(username="bench-researcher", role="researcher")
    dataset, campaign, run = build(skills, data, raters)
    client = Client()
    client.force_login(researcher)
    out: dict = {}
    for name, slice_dim, slice_value in (
        ("all", "", ""),
        ("difficulty3", "difficulty", "3"),
    ):
        cache.clear()
        result = sa.agreement_compute(
            dataset=dataset,
            campaign_ids=[campaign.pk],
            run_ids=[run.pk],
            n_boot=n_boot,
            slice_dim=slice_dim,
            slice_value=slice_value,
        )
        plain = result.to_dict() if hasattr(result, "to_dict") else result
        out[f"{name}/result"] = plain
        query = f"?campaign={campaign.pk}&run={run.pk}&n_boot={n_boot}"
        if slice_dim:
            query += f"&slice={slice_dim}:{slice_value}"
        api = client.get(reverse("analysis_api:agreement", args=[dataset.pk]) + query)
        out[f"{name}/api"] = api.content.decode()
        out[f"{name}/table.csv"] = display.table_csv_lines(result)
        out[f"{name}/models.csv"] = display.model_csv_lines(result)
        out[f"{name}/command.table"] = render_table(result)
        text = io.StringIO()
        argv = ["--dataset", dataset.name, "--run", str(run.pk)]
        argv += ["--campaign", str(campaign.pk), "--boot", str(n_boot)]
        if slice_dim:
            argv += ["--slice", f"{slice_dim}={slice_value}"]
        call_command("agreement", *argv, "--format", "json", stdout=text)
        out[f"{name}/command.json"] = text.getvalue()
        page = reverse("analysis:agreement", args=[dataset.pk]) + query
        for view, extra in (("", ""), ("full", "&full=1"), ("radar-all", "&radar=all")):
            html = client.get(page + extra).content.decode()
            out[f"{name}/page{'.' if view else ''}{view}"] = _no_token(html)
    return out


def _no_token(html: str) -> str:
    """The page without its CSRF token (a new one on every request)."""
    html = re.sub(r'("X-CSRFToken": ")[^"]+"', r'\1"', html)
    return re.sub(r'(name="csrfmiddlewaretoken" value=")[^"]+"', r'\1"', html)


if __name__ == "__main__":
    main()
