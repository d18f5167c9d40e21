"""Meta-evaluation report from PostgreSQL over 100,000 stored pairwise verdicts.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/metaeval_db.py [--boot 1000] [--repeat 3]

Creates a scratch database (dropped at the end), migrates it and writes with COPY:
25,000 instructions x 3 models = 75,000 responses, 50,000 preference pairs in 8
categories, 65,000 human votes (30% of the pairs have 2 or 3 votes, some ties), and
one judge run with a verdict in both orders for every pair: 100,000 verdicts (with
position bias, ties and 1% errors). Then measures (median of --repeat):

  report  metaeval_compute(): the queries into arrays plus every figure overall and
          per category, with --boot bootstrap resamples, and the order, length and
          self-preference probes (target: the report renders in under 2 s);
  page    GET of the meta-evaluation page (the report plus the HTML);
  load    the query part alone.
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

from bench.common import median_time  # noqa: E402
from bench.export_scores import copy_rows, drop_database, scratch_database  # noqa: E402

N_INSTRUCTIONS = 25_000
MODELS = ("model-a", "model-b", "model-c")
CATEGORIES = [f"cat-{k}" for k in range(8)]
TARGET = 2.0


def build(seed: int = 0):
    from django.db import transaction

    from annotation.models import (
        Dataset,
        EvaluatedModel,
        HumanPreference,
        Instruction,
        PreferencePair,
        Response,
    )
    from annotation.services.rubrics import rubric_get_default
    from judging.models import JudgeConfig, JudgeRun, PairwiseVerdict

    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    with transaction.atomic():
        dataset = Dataset.objects.create(
            name="metaeval-bench", rubric=rubric_get_default()
        )
        copy_rows(
            Instruction,
            ["dataset_id", "external_id", "text", "reference_answer", "source_task",
             "domain_1", "domain_2", "is_hard", "metadata", "position"],
            ((dataset.pk, str(i), f"Prompt {i}", "", "bench", "", "", False, "{}", i)
             for i in range(N_INSTRUCTIONS)),
        )  # fmt: skip
        iids = list(
            Instruction.objects.filter(dataset=dataset)
            .order_by("position")
            .values_list("pk", flat=True)
        )
        lengths = rng.integers(20, 400, (N_INSTRUCTIONS, len(MODELS)))
        copy_rows(
            Response,
            ["instruction_id", "model_name", "text", "metadata", "created_at"],
            ((iid, m, "x" * int(lengths[i, k]), "{}", now)
             for i, iid in enumerate(iids) for k, m in enumerate(MODELS)),
        )  # fmt: skip
        rid = {
            (iid, m): pk
            for pk, iid, m in Response.objects.filter(
                instruction__dataset=dataset
            ).values_list("pk", "instruction_id", "model_name")
        }
        pairs = []
        for i, iid in enumerate(iids):
            for a, b in ((0, 1), (0, 2)):
                pairs.append(
                    (iid, rid[(iid, MODELS[a])], rid[(iid, MODELS[b])], i, a, b)
                )
        copy_rows(
            PreferencePair,
            ["dataset_id", "instruction_id", "response_1_id", "response_2_id",
             "category", "source", "external_id", "created_at"],
            ((dataset.pk, iid, r1, r2, CATEGORIES[n % len(CATEGORIES)], "bench", "", now)
             for n, (iid, r1, r2, *_) in enumerate(pairs)),
        )  # fmt: skip
        pair_ids = list(
            PreferencePair.objects.filter(dataset=dataset)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        n_pairs = len(pair_ids)
        # latent preference: response 1 better with probability by model quality
        truth = rng.random(n_pairs) < 0.55
        n_votes = rng.choice([1, 2, 3], size=n_pairs, p=[0.7, 0.2, 0.1])
        votes = []
        for p, k in zip(range(n_pairs), n_votes, strict=True):
            for v in range(k):
                u = rng.random()
                label = "tie" if u < 0.08 else ("1" if (u < 0.85) == truth[p] else "2")
                votes.append((pair_ids[p], label, f"voter-{v}"))
        copy_rows(
            HumanPreference,
            ["pair_id", "label", "skill_labels", "rationale", "origin", "voter",
             "source_key", "shown_order", "created_at"],
            ((p, label, "{}", "", "imported", voter, f"bench:{n}", "", now)
             for n, (p, label, voter) in enumerate(votes)),
        )  # fmt: skip
        EvaluatedModel.objects.create(name="model-a", family="acme")
        config = JudgeConfig.objects.create(name="bench judge", model_family="acme")
        run = JudgeRun.objects.create(
            dataset=dataset,
            config=config,
            name="bench pairwise run",
            kind=JudgeRun.Kind.PAIRWISE,
            status=JudgeRun.Status.COMPLETED,
        )

        def verdict(p, order):
            u = rng.random()
            if u < 0.01:
                return ""
            if u < 0.06:
                return "tie"
            if u < 0.2:  # position bias: picks whatever is shown first
                return "1" if order == "ab" else "2"
            return "1" if (rng.random() < 0.8) == truth[p] else "2"

        raw = {"1": {"ab": "A", "ba": "B"}, "2": {"ab": "B", "ba": "A"}}
        copy_rows(
            PairwiseVerdict,
            ["run_id", "pair_id", "order", "sample_index", "verdict_raw", "verdict",
             "rationale", "created_at"],
            ((run.pk, pair_ids[p], order, 0,
              raw.get(v, {}).get(order, v), v, "", now)
             for p in range(n_pairs) for order in ("ab", "ba")
             for v in [verdict(p, order)]),
        )  # fmt: skip
    return dataset, run, len(votes)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
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
    from django.core.management import call_command
    from django.db import connection, connections
    from django.test import Client
    from django.urls import reverse

    try:
        call_command("migrate", verbosity=0)
        from analysis.selectors import metaeval as sm
        from judging.models import PairwiseVerdict
        from tests.factories import UserFactory

        t0 = time.perf_counter()
        dataset, run, n_votes = build()
        n_verdicts = PairwiseVerdict.objects.filter(run=run).count()
        print(
            f"data: {n_verdicts:,} verdicts (both orders of "
            f"{n_verdicts // 2:,} pairs), {n_votes:,} human votes, "
            f"{len(CATEGORIES)} categories (written in {time.perf_counter() - t0:.1f} s)"
        )
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
        kwargs = {"dataset": dataset, "run_ids": [run.pk], "n_boot": args.boot}
        result = sm.metaeval_compute(**kwargs)  # warm
        t_report, runs = median_time(lambda: sm.metaeval_compute(**kwargs), args.repeat)

        def load():
            sm._pairs(dataset)
            sm._votes(dataset)
            sm._verdict_rows([run.pk])

        t_load, _ = median_time(load, args.repeat)
        researcher = UserFactory(username="bench-researcher", role="researcher")
        client = Client()
        client.force_login(researcher)
        page = reverse("analysis:metaeval", args=[dataset.pk])

        def get():
            resp = client.get(page, {"run": run.pk, "n_boot": args.boot})
            assert resp.status_code == 200, resp.status_code

        t_page, page_runs = median_time(get, args.repeat)
        o = result["runs"][0]["report"]["overall"]
        print(
            f"report, {args.boot} resamples: median {t_report:.3f} s "
            f"(runs {', '.join(f'{t:.3f}' for t in runs)}); target < {TARGET} s, "
            f"ratio {t_report / TARGET:.2f}"
        )
        print(f"  of which the queries into arrays: {t_load:.3f} s")
        print(
            f"page (report + HTML): median {t_page:.3f} s "
            f"(runs {', '.join(f'{t:.3f}' for t in page_runs)}); ratio {t_page / TARGET:.2f}"
        )
        print(
            f"figures: accuracy mean {o['accuracy_mean']['value']:.3f} "
            f"{o['accuracy_mean']['ci']}, consistency {o['consistency']['value']:.3f}, "
            f"human LOO {o['human_loo']['value']:.3f} (n={o['human_loo']['n']})"
        )
    finally:
        connections.close_all()
        if not args.keep:
            drop_database(admin, url)


if __name__ == "__main__":
    main()
