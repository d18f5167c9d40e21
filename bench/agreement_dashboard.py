"""Agreement table from PostgreSQL: cold, cached, and against the library floor.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/agreement_dashboard.py [--boot 1000] [--repeat 3] \
        [--scale 1-10]

Creates a scratch database (dropped at the end), migrates it and writes with COPY a
dataset of 700 instructions x 12 models = 8,400 responses and the 12 FLASK skills:

  human  a campaign where 5,000 responses have 1 rater and 1,000 have 3 raters, every
         skill scored: 96,000 human scores (about 3% N/A);
  judge  one run scoring every (response, skill): 100,800 judge scores (3% N/A).

Scores are correlated through a latent quality per (response, skill) with model and
skill effects, so the statistics are realistic. ``--scale 1-10`` scores the same
twelve criteria on 1..10 instead (a copy of the FLASK rubric with scale_max 10; the
latent quality and the noise stretched by 9/4), for the cost of a wider scale. Then measures, median of --repeat:

  cold    agreement_compute(n_boot=--boot) with an empty cache: the queries into
          arrays plus every statistic per skill, ability and overall with bootstrap
          CIs (target < 3 s), split into loading and computing;
  cached  the same call again (fingerprint queries + cache read; target < 200 ms);
  http    GET of the API endpoint and of the dashboard page, cold and cached;
  floor   the same point statistics straight from scipy / krippendorff / sklearn on
          the same arrays, once per group, without any bootstrap, and the ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# A benchmark is a development tool: it runs on the development key unless
# DJANGO_SECRET_KEY is set (flaskapp/secret_key.py).
os.environ.setdefault("FLASK_DEV", "1")
sys.path.insert(0, str(ROOT))

from bench.agreement_stats import library_point_stats  # noqa: E402
from bench.common import median_time  # noqa: E402
from bench.export_scores import copy_rows, drop_database, scratch_database  # noqa: E402

N_INSTRUCTIONS = 700
N_MODELS = 12
SINGLE, TRIPLE = 5000, 1000
TARGET_COLD, TARGET_CACHED = 3.0, 0.2


def synthesize(skill_keys: list[str], seed: int = 0, high: int = 5):
    """Scores for (response index, skill index): humans (list per rater) and judge,
    on 1..high (the 1..5 draws stretched; the same random stream for any high)."""
    rng = np.random.default_rng(seed)
    k = (high - 1) / 4
    n_resp = N_INSTRUCTIONS * N_MODELS
    model = np.arange(n_resp) % N_MODELS
    n_sk = len(skill_keys)
    quality = np.clip(
        2.6
        + (model[:, None] - N_MODELS / 2) * 0.12
        + rng.normal(0, 0.3, n_sk)[None, :]
        + rng.normal(0, 0.9, (n_resp, n_sk)),
        1,
        5,
    )
    if high != 5:
        quality = 1 + (quality - 1) * k
    order = rng.permutation(n_resp)
    raters_of = np.zeros(n_resp, int)
    raters_of[order[:SINGLE]] = 1
    raters_of[order[SINGLE : SINGLE + TRIPLE]] = 3
    human = np.clip(
        np.round(quality[:, :, None] + k * rng.normal(0, 0.7, (n_resp, n_sk, 3))),
        1,
        high,
    )
    missing = np.arange(3)[None, None, :] >= raters_of[:, None, None]
    human = np.where(missing, np.nan, human)
    human_na = (rng.random(human.shape) < 0.03) & ~np.isnan(human)
    judge = np.clip(
        np.round(quality + k * 0.3 + k * rng.normal(0, 0.8, quality.shape)), 1, high
    )
    judge_na = rng.random(judge.shape) < 0.03
    return model, raters_of, human, human_na, judge, judge_na


def build(skills, data, raters) -> tuple:
    """Write dataset, campaign, assignments, scores and a judge run with COPY."""
    from django.db import transaction

    from annotation.models import (
        Assignment,
        Campaign,
        CampaignItem,
        Dataset,
        HumanScore,
        Instruction,
        Response,
    )
    from judging.models import JudgeRun, JudgeScore

    model, raters_of, human, human_na, judge, judge_na = data
    now = datetime.now(UTC)
    domains = ["math", "coding", "history", "health", "language"]
    rubric_id = skills[0].rubric_id
    with transaction.atomic():
        dataset = Dataset.objects.create(name="agreement-bench", rubric_id=rubric_id)
        copy_rows(
            Instruction,
            ["dataset_id", "external_id", "text", "reference_answer", "source_task",
             "domain_1", "domain_2", "difficulty", "is_hard", "metadata", "position",
             "instance_rubric"],
            (
                (dataset.pk, str(i + 1), f"Question {i}: explain.", "Ref.",
                 f"task-{i % 7}", domains[i % 5],
                 domains[(i + 1) % 5] if i % 3 == 0 else "", i % 5 + 1, i % 10 == 0,
                 "{}", i, "{}")
                for i in range(N_INSTRUCTIONS)
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
                for m in range(N_MODELS)
            ),
        )
        response_ids = list(
            Response.objects.filter(instruction__dataset=dataset)
            .order_by("instruction__position", "model_name")
            .values_list("pk", flat=True)
        )
        campaign = Campaign.objects.create(
            name="agreement-bench campaign", dataset=dataset, overlap=3
        )
        rated = np.flatnonzero(raters_of > 0)
        copy_rows(
            CampaignItem,
            ["campaign_id", "response_id", "target", "submitted", "reserved",
             "open_slots", "position"],
            (
                (campaign.pk, response_ids[r], int(raters_of[r]), int(raters_of[r]),
                 0, 0, i)
                for i, r in enumerate(rated)
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
                (campaign.pk, items[response_ids[r]], response_ids[r], raters[k].pk,
                 "submitted", "bench", now, now, now, "", "", "", "")
                for r in rated
                for k in range(int(raters_of[r]))
            ),
        )  # fmt: skip
        assignment_of = {
            (rid, rater): aid
            for aid, rid, rater in Assignment.objects.filter(
                campaign=campaign
            ).values_list("pk", "response_id", "rater_id")
        }

        def human_rows():
            for r in rated:
                for k in range(int(raters_of[r])):
                    aid = assignment_of[(response_ids[r], raters[k].pk)]
                    for s, skill in enumerate(skills):
                        na = bool(human_na[r, s, k])
                        score = None if na else int(human[r, s, k])
                        yield (aid, skill.pk, score, "", now, now)

        copy_rows(
            HumanScore,
            ["assignment_id", "skill_id", "score", "rationale", "created_at",
             "updated_at"],
            human_rows(),
        )  # fmt: skip
        run = JudgeRun.objects.create(
            dataset=dataset,
            name="bench judge",
            kind=JudgeRun.Kind.IMPORTED,
            status=JudgeRun.Status.COMPLETED,
        )
        copy_rows(
            JudgeScore,
            ["run_id", "response_id", "skill_id", "sample_index", "score",
             "rationale", "created_at"],
            (
                (run.pk, response_ids[r], skill.pk, 0,
                 None if judge_na[r, s] else int(judge[r, s]), "", now)
                for r in range(len(response_ids))
                for s, skill in enumerate(skills)
            ),
        )  # fmt: skip
    return dataset, campaign, run


def floor_groups(skills, abilities, data):
    """(name, ratings (n, 3) with NaN, judge (0 = N/A), model) per group, as the
    libraries take them: only numeric human scores, the same arrays the DB holds."""
    model, _, human, human_na, judge, judge_na = data
    per_skill = {}
    for s, skill in enumerate(skills):
        r = np.where(human_na[:, s, :], np.nan, human[:, s, :])
        j = np.where(judge_na[:, s], 0, judge[:, s]).astype(int)
        per_skill[skill.key] = (r, j, model)
    groups = [(f"skill:{k}", *v) for k, v in per_skill.items()]
    for label, keys in abilities.items():
        parts = [per_skill[k] for k in keys]
        groups.append(
            (f"ability:{label}", *(np.concatenate(p) for p in zip(*parts, strict=True)))
        )
    parts = list(per_skill.values())
    groups.append(("overall", *(np.concatenate(p) for p in zip(*parts, strict=True))))
    return groups


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the scratch database")
    ap.add_argument("--scale", choices=("1-5", "1-10"), default="1-5")
    ap.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also print the N costliest functions of one cold run on one thread",
    )
    args = ap.parse_args()
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL server (see the docstring)")
    url, admin = scratch_database(base)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver,localhost,127.0.0.1")
    import django

    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command
    from django.test import Client
    from django.urls import NoReverseMatch, reverse

    try:
        call_command("migrate", verbosity=0)
        from analysis.selectors import agreement as sa
        from analysis.selectors.agreement.inputs import load_inputs
        from annotation.models import Ability, Skill
        from annotation.services.rubrics import rubric_get_default
        from tests.factories import UserFactory

        rubric = rubric_get_default()
        skills = list(Skill.objects.filter(rubric=rubric).order_by("position"))
        high = int(args.scale.split("-")[1])
        if high != 5:  # the same criteria on 1..high
            from annotation.models import Rubric

            wide = Rubric.objects.create(name=f"FLASK on {args.scale}")
            for s in skills:
                s.pk, s.rubric, s.scale_max, s.scale_anchors = None, wide, high, {}
            Skill.objects.bulk_create(skills)
            skills = list(Skill.objects.filter(rubric=wide).order_by("position"))
        labels = dict(Ability.choices)
        abilities: dict[str, list[str]] = {}
        for s in skills:
            abilities.setdefault(labels[s.ability], []).append(s.key)
        data = synthesize([s.key for s in skills], high=high)
        raters = [
            UserFactory(username=f"bench-rater-{k}", role="rater") for k in range(3)
        ]
        researcher = UserFactory(username="bench-researcher", role="researcher")
        t0 = time.perf_counter()
        dataset, campaign, run = build(skills, data, raters)
        from annotation.models import HumanScore
        from judging.models import JudgeScore

        n_h = HumanScore.objects.filter(assignment__campaign=campaign).count()
        n_j = JudgeScore.objects.filter(run=run).count()
        print(
            f"data: {n_h:,} human scores, {n_j:,} judge scores, 12 skills on "
            f"{args.scale}, "
            f"{N_MODELS} models (written in {time.perf_counter() - t0:.1f} s)"
        )
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute("ANALYZE")

        kwargs = {
            "dataset": dataset,
            "campaign_ids": [campaign.pk],
            "run_ids": [run.pk],
            "n_boot": args.boot,
        }

        def cold():
            cache.clear()
            return sa.agreement_compute(**kwargs)

        cold()  # warm imports and the database's caches
        if args.profile:
            import cProfile
            import pstats

            from django.test import override_settings

            prof = cProfile.Profile()  # one thread, so the profile sees all of it
            with override_settings(AGREEMENT_WORKERS=1):
                prof.runcall(cold)
            pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
        t_cold, cold_runs = median_time(cold, args.repeat)
        t_load, _ = median_time(
            lambda: load_inputs(dataset, [campaign.pk], [run.pk], "", ""), args.repeat
        )
        result = sa.agreement_compute(**kwargs)
        t_cached, cached_runs = median_time(lambda: sa.agreement_compute(**kwargs), 20)
        # Printed before the HTTP part, so a refused request still leaves the figures.
        print(
            f"compute: cold {t_cold * 1000:.0f} ms (loading {t_load * 1000:.0f} ms), "
            f"cached {t_cached * 1000:.1f} ms",
            flush=True,
        )

        client = Client()
        client.force_login(researcher)
        api = (
            reverse("analysis_api:agreement", args=[dataset.pk])
            # The default resamples, as a person opening the page gets them: a web
            # request's n_boot shrinks to its work budget on a dataset this large
            # (an explicit --boot above that budget is refused with a 400).
            + f"?campaign={campaign.pk}&run={run.pk}"
        )

        def get(path):
            resp = client.get(path)
            # 202: a selection this large is computed by a background job (the
            # answer is its status; the page shows its progress), so what is timed
            # is how soon the person sees an answer.
            assert resp.status_code in (200, 202), (path, resp.status_code)
            return resp

        http = [("API", api)]
        try:
            page = reverse("analysis:agreement", args=[dataset.pk])
            http.append(
                (
                    "page",
                    page + f"?campaign={campaign.pk}&run={run.pk}",
                )
            )
        except NoReverseMatch:
            pass
        http_rows = []
        for name, path in http:
            t_c, _ = median_time(lambda p=path: (cache.clear(), get(p)), args.repeat)
            get(path)
            t_w, _ = median_time(lambda p=path: get(p), 20)
            http_rows.append((name, t_c, t_w))

        groups = floor_groups(skills, abilities, data)
        domain = np.arange(1, high + 1, dtype=float)
        library_point_stats(*groups[0][1:], domain)
        t0 = time.perf_counter()
        floor = {name: library_point_stats(r, j, m, domain) for name, r, j, m in groups}
        t_floor = time.perf_counter() - t0

        # the numbers from the database equal the libraries' on the same arrays
        rid = str(run.pk)
        worst, where = 0.0, ""
        for row in result.rows:
            ref = floor.get(row.key)
            j = row.judge(rid)
            pairs = [
                (k, j.stat(k).value, ref[k])
                for k in ("spearman", "kendall", "pearson", "qwk", "leniency", "mae")
            ]
            pairs.append(
                # The raters' alpha on the items this run scored too (the floor's
                # items); row.human is the ceiling over every human-rated item.
                ("alpha_ordinal", j.human.stat("alpha_ordinal").value,
                 ref["alpha_ordinal"])
            )  # fmt: skip
            for k, got, want in pairs:
                rel = abs(got - want) / max(abs(want), 1e-12)
                if rel > worst:
                    worst, where = rel, f"{row.key} {k}: {got!r} vs {want!r}"

        print(f"cold, {args.boot} resamples: median {t_cold:.3f} s "
              f"(runs {', '.join(f'{t:.3f}' for t in cold_runs)}); target < {TARGET_COLD} s, "
              f"ratio {t_cold / TARGET_COLD:.2f}")  # fmt: skip
        print(f"  of which loading the arrays (queries): {t_load:.3f} s")
        print(f"cached: median {t_cached * 1000:.1f} ms of 20; target < "
              f"{TARGET_CACHED * 1000:.0f} ms, ratio {t_cached / TARGET_CACHED:.2f}")  # fmt: skip
        for name, t_c, t_w in http_rows:
            print(f"http {name}: cold {t_c:.3f} s, cached median {t_w * 1000:.1f} ms")
        print(f"floor (libraries, point values only, {len(groups)} groups): {t_floor:.3f} s;"
              f" cold / floor = {t_cold / t_floor:.2f}x "
              f"(the cold run also has {args.boot} resamples of every statistic)")  # fmt: skip
        print(f"max relative difference vs libraries: {worst:.1e} ({where})")
        overall = result.row("overall").judge(rid)
        spearman = overall.stat("spearman")
        print(
            f"overall: spearman {spearman.value:.3f} {list(spearman.ci)}, "
            f"qwk {overall.stat('qwk').value:.3f}, "
            f"items {overall.scored_by_both:,}"
        )
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            drop_database(admin, url)


if __name__ == "__main__":
    main()
