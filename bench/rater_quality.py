"""Rater reliability at scale: 100 raters, 50,000 ratings of 12 criteria.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/rater_quality.py [--repeat 3] [--keep]

Creates a scratch database (dropped at the end), migrates it and writes with COPY a
synthetic dataset (labelled as such): 1,000 instructions x 10 models = 10,000
responses, a campaign where each response is rated by 5 of 100 raters (50,000
submitted ratings, every one of the 12 FLASK criteria scored: 600,000 scores, about
2% N/A), and 50 gold items (tolerance 1) of which each rater answered 10 (1,000 more
ratings).
Raters differ: a severity offset, a noise level, an active time per item; 5 of them
straight-line, 5 rush. Then measures, median of --repeat:

  cold    `campaign_reliability` with an empty cache: both queries into arrays and
          every figure per rater and criterion (target < 2 s);
  cached  the same call again: fingerprint queries + cache read (target < 150 ms);
  http    GET of the reliability page and of its API endpoint: cold (empty cache,
          median), the process's first request, and cached.

Rater models (issue 15): a synthetic judge run (labelled as such) scores every
response on every criterion (the truth plus noise of 0.5 points; 120,000 scores) and
joins the 100 raters as one more annotator. Per model (Dawid-Skene, MACE, GLAD):

  fit     `campaign_rater_models` with an empty cache: the queries and the fit of
          all 12 criteria (about 60,000 labels each); median of --repeat (target
          < 10 s); the first fit of the process, which also imports crowd-kit;
  cached  the same call again (fingerprint + defaults queries + cache read);
  http    the reliability page's `#rater-models` htmx fragment, cold and cached;

and where the judge ranks among the 100 raters on each criterion, and the careful /
careless raters' mean competence (the 5 straight-liners should come last).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("FLASK_DEV", "1")
sys.path.insert(0, str(ROOT))

from bench.common import median_time  # noqa: E402
from bench.export_scores import copy_rows, drop_database, scratch_database  # noqa: E402

N_INSTRUCTIONS, N_MODELS, N_RATERS, PER_RESPONSE = 1000, 10, 100, 5
N_GOLD, GOLD_PER_RATER = 50, 10
TARGET_COLD, TARGET_CACHED = 2.0, 0.15
TARGET_FIT = 10.0  # seconds, cold, per rater model
JUDGE_NOISE = 0.5
# Words of each flag's reason (analysis.selectors.reliability.rater_flags).
FLAG_KINDS = ("gold accuracy", "QWK", "than the others", "same score", "faster",
              "fell from")  # fmt: skip


def build(skills, raters, researcher, seed: int = 0):
    """Write the synthetic dataset, campaign, gold items and ratings with COPY."""
    from django.db import transaction

    from annotation.models import (
        Assignment,
        Campaign,
        CampaignItem,
        Dataset,
        GoldItem,
        GoldScore,
        HumanScore,
        Instruction,
        Response,
    )

    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    n_resp = N_INSTRUCTIONS * N_MODELS
    n_sk = len(skills)
    with transaction.atomic():
        dataset = Dataset.objects.create(
            name="reliability-bench (synthetic)", rubric_id=skills[0].rubric_id
        )
        copy_rows(
            Instruction,
            ["dataset_id", "external_id", "text", "reference_answer", "source_task",
             "domain_1", "domain_2", "difficulty", "is_hard", "metadata", "position",
             "instance_rubric"],
            ((dataset.pk, str(i + 1), f"Synthetic question {i}.", "", "bench", "math",
              "", 3, False, "{}", i, "{}") for i in range(N_INSTRUCTIONS)),
        )  # fmt: skip
        iids = list(
            Instruction.objects.filter(dataset=dataset)
            .order_by("position")
            .values_list("pk", flat=True)
        )
        copy_rows(
            Response,
            ["instruction_id", "model_name", "text", "metadata", "created_at"],
            ((iid, f"model-{m}", "Synthetic answer.", "{}", now)
             for iid in iids for m in range(N_MODELS)),
        )  # fmt: skip
        rids = list(
            Response.objects.filter(instruction__dataset=dataset)
            .order_by("instruction__position", "model_name")
            .values_list("pk", flat=True)
        )
        gold_rids = rids[-N_GOLD:]
        real_rids = rids[:-N_GOLD]
        truth = np.clip(np.round(rng.normal(3.2, 1.0, (n_resp, n_sk))), 1, 5)
        for k, rid in enumerate(gold_rids):
            g = GoldItem.objects.create(dataset=dataset, response_id=rid, tolerance=1,
                                        created_by=researcher)  # fmt: skip
            GoldScore.objects.bulk_create(
                GoldScore(gold=g, skill=s, score=int(truth[len(real_rids) + k, j]))
                for j, s in enumerate(skills)
            )
        campaign = Campaign.objects.create(
            name="reliability-bench campaign (synthetic)", dataset=dataset,
            overlap=PER_RESPONSE, gold_rate=50,
        )  # fmt: skip
        campaign.raters.set(raters)
        copy_rows(
            CampaignItem,
            ["campaign_id", "response_id", "target", "submitted", "reserved",
             "open_slots", "position", "gold"],
            [*((campaign.pk, rid, PER_RESPONSE, PER_RESPONSE, 0, 0, i, False)
               for i, rid in enumerate(real_rids)),
             *((campaign.pk, rid, 0, 0, 0, 0, len(real_rids) + i, True)
               for i, rid in enumerate(gold_rids))],
        )  # fmt: skip
        items = dict(
            CampaignItem.objects.filter(campaign=campaign).values_list(
                "response_id", "pk"
            )
        )
        severity = rng.normal(0, 0.35, N_RATERS)
        noise = rng.uniform(0.3, 1.0, N_RATERS)
        speed = rng.uniform(20, 90, N_RATERS)
        straight = set(range(5))
        rushing = set(range(5, 10))
        plan = []  # (rater index, response index, gold)
        n_real = len(real_rids)
        for r in range(n_real):
            for k in rng.choice(N_RATERS, PER_RESPONSE, replace=False):
                plan.append((int(k), r, False))
        for k in range(N_RATERS):
            for g in rng.choice(N_GOLD, GOLD_PER_RATER, replace=False):
                plan.append((k, n_real + int(g), True))
        order = rng.permutation(len(plan))
        plan = [plan[i] for i in order]
        start = now - timedelta(days=30)
        copy_rows(
            Assignment,
            ["campaign_id", "item_id", "response_id", "rater_id", "status", "reason",
             "served_at", "expires_at", "submitted_at", "skip_reason", "note",
             "shown_order", "critique", "active_seconds", "gold"],
            (
                (campaign.pk, items[rids[r]], rids[r], raters[k].pk, "submitted",
                 "bench", start + timedelta(seconds=40 * i),
                 start + timedelta(seconds=40 * i + 1800),
                 start + timedelta(seconds=40 * i + 30), "", "", "", "",
                 float(max(1.0, rng.normal(4 if k in rushing else speed[k], 3))),
                 gold)
                for i, (k, r, gold) in enumerate(plan)
            ),
        )  # fmt: skip
        aid = {
            (resp, rater): a
            for a, resp, rater in Assignment.objects.filter(
                campaign=campaign
            ).values_list("pk", "response_id", "rater_id")
        }

        def scores():
            for k, r, _ in plan:
                a = aid[(rids[r], raters[k].pk)]
                base = int(rng.integers(2, 5))
                values = np.clip(
                    np.round(truth[r] + severity[k] + rng.normal(0, noise[k], n_sk)),
                    1,
                    5,
                )
                na = rng.random(n_sk) < 0.02
                for j, s in enumerate(skills):
                    v = base if k in straight else int(values[j])
                    yield (a, s.pk, None if na[j] else v, "", now, now)

        copy_rows(
            HumanScore,
            ["assignment_id", "skill_id", "score", "rationale", "created_at",
             "updated_at"],
            scores(),
        )  # fmt: skip
        build_judge(dataset, skills, rids, truth, rng, now)
    return campaign, len(plan)


def build_judge(dataset, skills, rids, truth, rng, now):
    """A synthetic judge run (labelled as such) scoring every response on every
    criterion: the truth plus normal noise of JUDGE_NOISE points, rounded."""
    from judging.models import JudgeRun, JudgeScore

    run = JudgeRun.objects.create(
        dataset=dataset, name="bench judge (synthetic)", kind=JudgeRun.Kind.IMPORTED,
        status=JudgeRun.Status.COMPLETED, finished_at=now,
    )  # fmt: skip
    values = np.clip(np.round(truth + rng.normal(0, JUDGE_NOISE, truth.shape)), 1, 5)
    copy_rows(
        JudgeScore,
        ["run_id", "response_id", "skill_id", "sample_index", "score", "rationale",
         "created_at"],
        ((run.pk, rid, s.pk, 0, int(values[i, j]), "", now)
         for i, rid in enumerate(rids) for j, s in enumerate(skills)),
    )  # fmt: skip
    return run


def bench_rater_models(campaign, client, repeat: int) -> None:
    """The rater models' fit, cached read and htmx fragment, per model (docstring)."""
    from django.core.cache import cache

    from analysis.selectors.competence import METHODS, campaign_rater_models

    straight = {f"bench-rater-{k:03d}" for k in range(5)}
    for method, name in METHODS.items():

        def cold(m=method):
            cache.clear()
            return campaign_rater_models(campaign=campaign, method=m)

        t0 = time.perf_counter()
        report = cold()
        first = time.perf_counter() - t0
        t_fit, runs = median_time(cold, repeat)
        t_hit, _ = median_time(
            lambda m=method: campaign_rater_models(campaign=campaign, method=m),
            max(repeat, 5),
        )
        ranks = [c.judges[0].rank for c in report.criteria if c.judges]
        humans = [a for c in report.criteria for a in c.annotators if a.kind == "human"]
        careless = [a.competence for a in humans if a.name in straight]
        careful = [a.competence for a in humans if a.name not in straight]
        last = sum(
            1
            for c in report.criteria
            for a in c.annotators
            if a.kind == "human"
            and a.name in straight
            and a.rank > len(c.annotators) - 6
        )
        print(
            f"rater model {name:11} fit {t_fit:5.2f} s median of {repeat} "
            f"({', '.join(f'{t:.2f}' for t in runs)}; first of the process "
            f"{first:.2f} s); target < {TARGET_FIT:.0f} s: "
            f"{'ok' if t_fit < TARGET_FIT else 'MISSED'}; cached "
            f"{t_hit * 1000:.1f} ms median"
        )
        print(
            f"    the judge ranks {min(ranks)}-{max(ranks)} (median "
            f"{statistics.median(ranks):g}) of {report.criteria[0].judges[0].of} on "
            f"the {len(ranks)} criteria; mean competence: careful raters "
            f"{statistics.mean(careful):.3f}, straight-liners "
            f"{statistics.mean(careless):.3f} ({last} of {5 * len(report.criteria)} "
            f"in the last 5 places); iterations "
            f"{sorted({c.iterations for c in report.criteria})}"
        )
        path = f"/reliability/{campaign.pk}/?model={method}"

        def cold_get(p=path):
            cache.clear()
            return client.get(p, headers={"HX-Request": "true"})

        status = cold_get().status_code
        t_cold_http, _ = median_time(cold_get, repeat)
        t_hit_http, _ = median_time(
            lambda p=path: client.get(p, headers={"HX-Request": "true"}),
            max(repeat, 5),
        )
        print(
            f"    http fragment cold {t_cold_http:.2f} s median, cached "
            f"{t_hit_http * 1000:.1f} ms median (status {status})"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the scratch database")
    ap.add_argument(
        "--profile", type=int, default=0, metavar="N",
        help="also print the N costliest functions of one cold report",
    )  # fmt: skip
    ap.add_argument("--no-models", action="store_true", help="skip the rater models")
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
    from django.db import connection
    from django.test import Client

    try:
        call_command("migrate", verbosity=0)
        from analysis.selectors.reliability import campaign_reliability
        from annotation.models import HumanScore, Skill
        from annotation.services.rubrics import rubric_get_default
        from tests.factories import UserFactory

        skills = list(
            Skill.objects.filter(rubric=rubric_get_default()).order_by("position")
        )
        raters = [
            UserFactory(username=f"bench-rater-{k:03d}", role="rater")
            for k in range(N_RATERS)
        ]
        researcher = UserFactory(username="bench-researcher", role="researcher")
        t0 = time.perf_counter()
        campaign, n_ratings = build(skills, raters, researcher)
        n_scores = HumanScore.objects.filter(assignment__campaign=campaign).count()
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
        print(
            f"data (synthetic): {N_RATERS} raters, {n_ratings:,} ratings "
            f"({N_RATERS * GOLD_PER_RATER:,} of gold items), {n_scores:,} scores of "
            f"{len(skills)} criteria (written in {time.perf_counter() - t0:.1f} s)"
        )

        def cold():
            cache.clear()
            return campaign_reliability(campaign=campaign)

        report = cold()
        flagged = sum(1 for r in report.raters if r.flags)
        kinds: dict[str, int] = {}
        for r in report.raters:
            for f in r.flags:
                kind = next((k for k in FLAG_KINDS if k in f), "other")
                kinds[kind] = kinds.get(kind, 0) + 1
        print(
            f"report: {len(report.raters)} raters, {report.scores:,} scores used, "
            f"{flagged} flagged: "
            + ", ".join(f"{n} {k!r}" for k, n in sorted(kinds.items()))
        )
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.runcall(cold)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)
        t_cold, runs = median_time(cold, args.repeat)
        print(
            f"cold    {t_cold * 1000:7.0f} ms median of {args.repeat} "
            f"({', '.join(f'{t * 1000:.0f}' for t in runs)}); target < "
            f"{TARGET_COLD * 1000:.0f} ms: {'ok' if t_cold < TARGET_COLD else 'MISSED'}"
        )
        cold()
        t_cached, runs = median_time(
            lambda: campaign_reliability(campaign=campaign), max(args.repeat, 5)
        )
        print(
            f"cached  {t_cached * 1000:7.1f} ms median; target < "
            f"{TARGET_CACHED * 1000:.0f} ms: "
            f"{'ok' if t_cached < TARGET_CACHED else 'MISSED'}"
        )
        client = Client()
        client.force_login(researcher)
        for label, path in (
            ("page", f"/reliability/{campaign.pk}/"),
            ("api", f"/api/campaigns/{campaign.pk}/reliability/"),
        ):
            cache.clear()
            t0 = time.perf_counter()
            status = client.get(path).status_code  # the process's first request
            first = time.perf_counter() - t0

            def cold_get(p=path):
                cache.clear()
                client.get(p)

            t_cold_http, _ = median_time(cold_get, args.repeat)
            t_hit, _ = median_time(lambda p=path: client.get(p), max(args.repeat, 5))
            print(
                f"http {label:4} cold {t_cold_http * 1000:6.0f} ms median "
                f"(first request of the process {first * 1000:.0f} ms), cached "
                f"{t_hit * 1000:6.1f} ms median (status {status})"
            )
        if not args.no_models:
            bench_rater_models(campaign, client, args.repeat)
    finally:
        connection.close()
        if not args.keep:
            drop_database(admin, url)


if __name__ == "__main__":
    main()
