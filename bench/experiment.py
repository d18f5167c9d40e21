"""Experiment page from PostgreSQL: cold and cached, 10 runs compared with a baseline.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/experiment.py [--runs 10] [--boot 1000] [--repeat 3]

Creates a scratch database (dropped at the end) and writes with COPY a synthetic
dataset (labelled so) of 1,700 instructions x 15 models = 25,500 responses, FLASK's
first three criteria, a human campaign (2,000 responses with one rater and 500 with
three), a 20% test split, and --runs judge runs that score every (response,
criterion) (76,500 scores each) with one call per response (tokens, cost, latency).
The runs are correlated with the humans through a latent quality, each with its own
noise, so the paired differences are realistic. Then measures, median of --repeat:

  cold    experiment_figures(n_boot=--boot) with an empty cache: per run and row, the
          figures with CIs, the paired bootstrap against the baseline, the ceiling and
          the call aggregates (target < 5 s);
  cached  the same call again (target < 150 ms);
  http    GET of the experiment page, cold and cached.
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
os.environ.setdefault("FLASK_DEV", "1")
sys.path.insert(0, str(ROOT))

from bench.common import median_time  # noqa: E402
from bench.export_scores import copy_rows, drop_database, scratch_database  # noqa: E402

N_INSTRUCTIONS, N_MODELS, N_CRITERIA = 1700, 15, 3
SINGLE, TRIPLE = 2000, 500
TARGET_COLD, TARGET_CACHED = 5.0, 0.15


def build(skills, n_runs: int, raters, seed: int = 0):
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
    from judging.models import JudgeCall, JudgeRun, JudgeScore

    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    n_resp = N_INSTRUCTIONS * N_MODELS
    model = np.arange(n_resp) % N_MODELS
    quality = np.clip(
        3 + (model[:, None] - 7) * 0.1 + rng.normal(0, 0.9, (n_resp, N_CRITERIA)), 1, 5
    )
    domains = ["math", "coding", "history", "health", "language"]
    with transaction.atomic():
        dataset = Dataset.objects.create(
            name="experiment-bench (synthetic)", rubric_id=skills[0].rubric_id
        )
        copy_rows(
            Instruction,
            ["dataset_id", "external_id", "text", "reference_answer", "source_task",
             "domain_1", "domain_2", "difficulty", "is_hard", "metadata", "position",
             "instance_rubric"],
            ((dataset.pk, str(i + 1), f"Synthetic question {i}.", "", "bench",
              domains[i % 5], "", i % 5 + 1, False, "{}", i, "{}")
             for i in range(N_INSTRUCTIONS)),
        )  # fmt: skip
        iids = list(
            Instruction.objects.filter(dataset=dataset)
            .order_by("position")
            .values_list("pk", flat=True)
        )
        copy_rows(
            Response,
            ["instruction_id", "model_name", "text", "metadata", "created_at"],
            ((iid, f"model-{m:02d}", "Synthetic answer.", "{}", now)
             for iid in iids for m in range(N_MODELS)),
        )  # fmt: skip
        rids = list(
            Response.objects.filter(instruction__dataset=dataset)
            .order_by("instruction__position", "model_name")
            .values_list("pk", flat=True)
        )
        campaign = Campaign.objects.create(
            name="experiment-bench humans (synthetic)", dataset=dataset, overlap=3
        )
        order = rng.permutation(n_resp)
        raters_of = np.zeros(n_resp, int)
        raters_of[order[:SINGLE]] = 1
        raters_of[order[SINGLE : SINGLE + TRIPLE]] = 3
        rated = np.flatnonzero(raters_of)
        copy_rows(
            CampaignItem,
            ["campaign_id", "response_id", "target", "submitted", "reserved",
             "open_slots", "position"],
            ((campaign.pk, rids[r], int(raters_of[r]), int(raters_of[r]), 0, 0, i)
             for i, r in enumerate(rated)),
        )  # fmt: skip
        items = dict(
            CampaignItem.objects.filter(campaign=campaign).values_list(
                "response_id", "pk"
            )
        )
        copy_rows(
            Assignment,
            ["campaign_id", "item_id", "response_id", "rater_id", "status", "reason",
             "served_at", "expires_at", "submitted_at", "skip_reason", "note",
             "shown_order", "critique"],
            ((campaign.pk, items[rids[r]], rids[r], raters[k].pk, "submitted", "bench",
              now, now, now, "", "", "", "")
             for r in rated for k in range(int(raters_of[r]))),
        )  # fmt: skip
        aid = {
            (a, b): c
            for c, a, b in Assignment.objects.filter(campaign=campaign).values_list(
                "pk", "response_id", "rater_id"
            )
        }
        human = np.clip(
            np.round(quality[:, :, None] + rng.normal(0, 0.6, (n_resp, N_CRITERIA, 3))),
            1,
            5,
        ).astype(int)
        copy_rows(
            HumanScore,
            ["assignment_id", "skill_id", "score", "rationale", "created_at",
             "updated_at"],
            ((aid[(rids[r], raters[k].pk)], skills[s].pk, int(human[r, s, k]), "",
              now, now)
             for r in rated for k in range(int(raters_of[r]))
             for s in range(N_CRITERIA)),
        )  # fmt: skip
        runs = []
        for j in range(n_runs):
            run = JudgeRun.objects.create(
                dataset=dataset,
                name=f"synthetic judge {j + 1}",
                kind=JudgeRun.Kind.IMPORTED,
                status=JudgeRun.Status.COMPLETED,
                source_note="bench/experiment.py (synthetic)",
            )
            noise = 0.5 + 0.05 * j
            judge = np.clip(
                np.round(quality + 0.1 * j + rng.normal(0, noise, quality.shape)), 1, 5
            ).astype(int)
            copy_rows(
                JudgeCall,
                ["run_id", "response_id", "order", "sample_index", "status",
                 "prompt_hash", "raw_output", "error", "error_kind", "attempts",
                 "parse_failures", "input_tokens", "output_tokens", "cost",
                 "latency_ms", "cached", "claim_token", "driver_token"],
                ((run.pk, rids[r], "", 0, "succeeded", "", "", "", "", 1,
                  int(rng.random() < 0.01), 900, 150, "0.0012",
                  int(rng.integers(300, 1500)), False, "", "")
                 for r in range(n_resp)),
            )  # fmt: skip
            copy_rows(
                JudgeScore,
                ["run_id", "response_id", "skill_id", "sample_index", "score",
                 "rationale", "created_at"],
                ((run.pk, rids[r], skills[s].pk, 0, int(judge[r, s]), "", now)
                 for r in range(n_resp) for s in range(N_CRITERIA)),
            )  # fmt: skip
            runs.append(run)
    return dataset, campaign, runs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also print the N costliest functions of one cold run",
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
    from django.db import connection, connections
    from django.test import Client
    from django.urls import reverse

    try:
        call_command("migrate", verbosity=0)
        from analysis.selectors.experiments import experiment_figures
        from annotation.models import Skill
        from annotation.services.rubrics import rubric_get_default
        from judging.services.experiments import experiment_create
        from judging.services.splits import eval_split_create
        from tests.factories import UserFactory

        rubric = rubric_get_default()
        skills = list(Skill.objects.filter(rubric=rubric).order_by("position"))
        skills = skills[:N_CRITERIA]
        raters = [
            UserFactory(username=f"bench-rater-{k}", role="rater") for k in range(3)
        ]
        researcher = UserFactory(username="bench-researcher", role="researcher")
        t0 = time.perf_counter()
        dataset, campaign, runs = build(skills, args.runs, raters)
        eval_split_create(dataset=dataset, user=researcher, test_fraction=0.2, seed=1)
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        experiment = experiment_create(
            user=researcher,
            dataset=dataset,
            name="bench",
            run_ids=[r.pk for r in runs],
            campaign_ids=[campaign.pk],
        )
        t_create = time.perf_counter() - t0
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
        print(
            f"data (synthetic): {N_INSTRUCTIONS * N_MODELS:,} responses x {N_CRITERIA} "
            f"criteria, {len(runs)} runs ({len(runs) * N_INSTRUCTIONS * N_MODELS * N_CRITERIA:,} "
            f"judge scores), written in {t_build:.1f} s; experiment_create (checks that "
            f"every run covers the same items) {t_create:.2f} s"
        )

        def cold():
            cache.clear()
            return experiment_figures(experiment=experiment, n_boot=args.boot)

        result = cold()  # warm imports and the database's caches
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.runcall(cold)
            pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
        t_cold, cold_runs = median_time(cold, args.repeat)
        experiment_figures(experiment=experiment, n_boot=args.boot)
        t_cached, _ = median_time(
            lambda: experiment_figures(experiment=experiment, n_boot=args.boot), 20
        )
        client = Client()
        client.force_login(researcher)
        page = (
            reverse("analysis:experiment", args=[experiment.pk])
            + f"?n_boot={args.boot}"
        )

        def get():
            resp = client.get(page)
            assert resp.status_code == 200, resp.status_code
            return resp

        t_page_cold, _ = median_time(lambda: (cache.clear(), get()), args.repeat)
        get()
        t_page_cached, _ = median_time(get, 20)
        print(f"cold, {args.boot} paired resamples: median {t_cold:.3f} s (runs "
              f"{', '.join(f'{t:.3f}' for t in cold_runs)}); target < {TARGET_COLD} s, "
              f"ratio {t_cold / TARGET_COLD:.2f}")  # fmt: skip
        print(f"cached: median {t_cached * 1000:.1f} ms of 20; target < "
              f"{TARGET_CACHED * 1000:.0f} ms, ratio {t_cached / TARGET_CACHED:.2f}")  # fmt: skip
        print(f"http page: cold {t_page_cold:.3f} s, cached median "
              f"{t_page_cached * 1000:.1f} ms")  # fmt: skip
        last = result["runs"][-1]
        overall = last["vs_baseline"]["overall"]
        print(f"part: {result['part_label']}; last run vs baseline, overall QWK "
              f"difference {overall['diff']['qwk']['value']:.3f} "
              f"{overall['diff']['qwk']['ci']} (n={overall['n']:,}), winner "
              f"{overall['winner']['qwk']}")  # fmt: skip
    finally:
        connections.close_all()
        drop_database(admin, url)


if __name__ == "__main__":
    main()
