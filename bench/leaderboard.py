"""Leaderboard benchmarks, on PostgreSQL. Sections (``--section``):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/leaderboard.py [--section pairwise|profiles|all] \\
        [--boot 1000] [--repeat 3]

pairwise
    Creates a scratch database (dropped at the end), migrates it and writes with COPY
    a dataset of 2,000 instructions x 15 models = 30,000 responses, 20,000 preference
    pairs (10 per instruction) and 100,000 SYNTHETIC human votes (5 per pair; labels
    drawn from a Bradley-Terry model with 12% ties and response lengths that sway
    the votes). Then measures, median of --repeat (every call is cold: the leaderboard
    has no cache):

      cold    pairwise_leaderboard(n_boot=--boot): the grouped query plus the fit of
              the data and of every resample (target < 5 s), split into loading
              and computing; and the same with length control;
      floor   one choix.ilsr_pairwise fit (no bootstrap) on the same votes, and the
              ratio of the cold leaderboard to it.

profiles
    (``bench_profiles``) FLASK skill profiles (analysis.selectors.skill_profiles) on
    SYNTHETIC data: 4,250 instructions x 15 models = 63,750 responses and the 12 FLASK
    criteria; one judge run scoring every (response, criterion): 765,000 judge scores
    (about 2% N/A); a human campaign where the responses of the first 500
    instructions have one rater each: 90,000 human scores. Scores follow a latent
    quality per (response, criterion) with model and criterion effects. Measures,
    median of --repeat:

      cold    skill_profiles(n_boot=--boot) with an empty cache: the queries into
              arrays, then the bootstrap clustered by instruction, ranks and
              pairwise-order probabilities for 2 sources x 15 models x 17 rows
              (target < 3 s), split into loading and computing;
      cached  the same call again (fingerprint + cache read).
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

TARGET_SECONDS = 5.0
N_MODELS, N_INSTRUCTIONS, PAIRS_PER_INSTRUCTION, VOTES_PER_PAIR = 15, 2000, 10, 5


def build_votes(seed: int = 0):
    """The synthetic dataset (module doc) written with COPY; returns (dataset, the
    votes as (model_1, model_2, outcome code) arrays for the floor)."""
    from django.db import transaction

    from annotation.models import (
        Dataset,
        HumanPreference,
        Instruction,
        PreferencePair,
        Response,
    )
    from annotation.services.rubrics import rubric_get_default

    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)
    strength = np.linspace(-1.2, 1.2, N_MODELS)
    length = rng.integers(200, 2000, size=(N_INSTRUCTIONS, N_MODELS))
    with transaction.atomic():
        dataset = Dataset.objects.create(
            name="bench leaderboard (synthetic votes)", rubric=rubric_get_default()
        )
        copy_rows(
            Instruction,
            ["dataset_id", "external_id", "text", "reference_answer", "source_task",
             "domain_1", "domain_2", "difficulty", "is_hard", "metadata", "position",
             "instance_rubric"],
            ((dataset.pk, str(i + 1), f"Question {i}", "", "bench", "math", "", 3,
              False, "{}", i, "{}") for i in range(N_INSTRUCTIONS)),
        )  # fmt: skip
        iids = list(
            Instruction.objects.filter(dataset=dataset)
            .order_by("position")
            .values_list("pk", flat=True)
        )
        copy_rows(
            Response,
            ["instruction_id", "model_name", "text", "metadata", "created_at"],
            ((iid, f"model-{m:02d}", "x" * int(length[i, m]), "{}", now)
             for i, iid in enumerate(iids) for m in range(N_MODELS)),
        )  # fmt: skip
        rid = np.array(
            Response.objects.filter(instruction__dataset=dataset)
            .order_by("instruction__position", "model_name")
            .values_list("pk", flat=True)
        ).reshape(N_INSTRUCTIONS, N_MODELS)
        pairs = []
        for i in range(N_INSTRUCTIONS):
            chosen = set()
            while len(chosen) < PAIRS_PER_INSTRUCTION:  # distinct pairs
                a, b = rng.choice(N_MODELS, 2, replace=False)
                chosen.add((int(a), int(b)))
            pairs += [(i, a, b) for a, b in sorted(chosen)]
        copy_rows(
            PreferencePair,
            ["dataset_id", "instruction_id", "response_1_id", "response_2_id",
             "category", "source", "external_id", "created_at"],
            ((dataset.pk, iids[i], int(rid[i, a]), int(rid[i, b]), "", "bench", "",
              now) for i, a, b in pairs),
        )  # fmt: skip
        pair_ids = list(
            PreferencePair.objects.filter(dataset=dataset)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        p = np.array(pairs)
        d = (length[p[:, 0], p[:, 1]] - length[p[:, 0], p[:, 2]]) / (
            length[p[:, 0], p[:, 1]] + length[p[:, 0], p[:, 2]]
        )
        eta = strength[p[:, 1]] - strength[p[:, 2]] + 1.5 * d
        eta = np.repeat(eta, VOTES_PER_PAIR)
        win = rng.random(eta.size) < 1 / (1 + np.exp(-eta))
        outcome = np.where(rng.random(eta.size) < 0.12, 2, np.where(win, 0, 1))
        labels = np.array(["1", "2", "tie"])[outcome]
        vote_pair = np.repeat(np.array(pair_ids), VOTES_PER_PAIR)
        copy_rows(
            HumanPreference,
            ["pair_id", "label", "skill_labels", "rationale", "origin", "voter",
             "source_key", "shown_order", "created_at"],
            ((int(pid), lab, "{}", "", "imported", f"synthetic-{k % 500}", "", "",
              now) for k, (pid, lab) in enumerate(zip(vote_pair, labels, strict=True)))
        )  # fmt: skip
    votes = (
        np.repeat(p[:, 1], VOTES_PER_PAIR),
        np.repeat(p[:, 2], VOTES_PER_PAIR),
        outcome,
    )
    return dataset, votes


def bench_pairwise(args) -> None:
    """The pairwise section (module doc); needs Django set up on the scratch DB."""
    import choix

    from analysis.selectors import leaderboard as sl

    t0 = time.perf_counter()
    dataset, (m1, m2, outcome) = build_votes()
    print(
        f"pairwise: {N_MODELS} models, {outcome.size:,} synthetic human votes on "
        f"{outcome.size // VOTES_PER_PAIR:,} pairs written in "
        f"{time.perf_counter() - t0:.1f} s; {args.boot} resamples"
    )
    groups = {}

    def load():
        groups["g"] = sl._vote_groups(dataset, None, False)

    load_s, _ = median_time(load, args.repeat)

    def cold():
        sl.pairwise_leaderboard(dataset=dataset, n_boot=args.boot)

    def cold_lc():
        sl.pairwise_leaderboard(dataset=dataset, n_boot=args.boot, length_control=True)

    cold_s, times = median_time(cold, args.repeat)
    lc_s, lc_times = median_time(cold_lc, args.repeat)
    print(
        f"  cold   {cold_s:.3f} s median of {[round(t, 3) for t in times]} "
        f"(target < {TARGET_SECONDS:.0f} s: {'met' if cold_s < TARGET_SECONDS else 'MISSED'}"
        f"; {cold_s / TARGET_SECONDS:.2f} of the target)"
    )
    print(f"         loading {load_s:.3f} s, computing {cold_s - load_s:.3f} s")
    print(
        f"  cold, length control  {lc_s:.3f} s median of "
        f"{[round(t, 3) for t in lc_times]}"
    )
    data = []
    for i, j, o in zip(m1.tolist(), m2.tolist(), outcome.tolist(), strict=True):
        data += [(i, j), (i, j)] if o == 0 else [(j, i), (j, i)] if o == 1 else [
            (i, j), (j, i)]  # fmt: skip
    t0 = time.perf_counter()
    ref = choix.ilsr_pairwise(N_MODELS, data, alpha=0.0, tol=1e-8)
    floor = time.perf_counter() - t0
    result = sl.pairwise_leaderboard(dataset=dataset, n_boot=0)
    ours = {m["name"]: m["rating"]["value"] for m in result["models"]}
    ref = 400 / np.log(10) * (ref - ref.mean()) + 1000
    gap = max(abs(ours[f"model-{k:02d}"] - ref[k]) for k in range(N_MODELS))
    print(
        f"  floor  one choix.ilsr_pairwise fit, no bootstrap: {floor:.3f} s; "
        f"ratio cold / floor = {cold_s / floor:.2f} "
        f"(max rating gap to choix {gap:.2e} points)"
    )


PROFILE_INSTRUCTIONS, PROFILE_MODELS, PROFILE_HUMAN_INSTRUCTIONS = 4250, 15, 500
TARGET_PROFILES_COLD = 3.0


def _profiles_data(n_resp: int, n_skills: int, seed: int = 0):
    """Latent quality per (response, criterion); judge and human scores around it."""
    rng = np.random.default_rng(seed)
    model = np.arange(n_resp) % PROFILE_MODELS
    effect = np.linspace(-1.0, 1.0, PROFILE_MODELS)[model][:, None]
    skill = rng.normal(0, 0.4, n_skills)[None, :]
    q = 3.2 + effect + skill + rng.normal(0, 0.8, (n_resp, n_skills))
    judge = np.clip(np.rint(q + 0.3 + rng.normal(0, 0.6, q.shape)), 1, 5).astype(int)
    human = np.clip(np.rint(q + rng.normal(0, 0.6, q.shape)), 1, 5).astype(int)
    judge_na = rng.random(q.shape) < 0.02
    return judge, judge_na, human


def build_profiles(skills, rater):
    """The profiles section's synthetic dataset, judge run and campaign (COPY)."""
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

    now = datetime.now(UTC)
    domains = ["math", "coding", "history", "health", "language"]
    n_i = PROFILE_INSTRUCTIONS
    with transaction.atomic():
        dataset = Dataset.objects.create(
            name="leaderboard-bench profiles (synthetic)", rubric_id=skills[0].rubric_id
        )
        copy_rows(
            Instruction,
            ["dataset_id", "external_id", "text", "reference_answer", "source_task",
             "domain_1", "domain_2", "difficulty", "is_hard", "metadata", "position",
             "instance_rubric"],
            ((dataset.pk, str(i + 1), f"Synthetic question {i}.", "Ref.",
              f"task-{i % 7}", domains[i % 5], "", i % 5 + 1, i % 10 == 0, "{}", i,
              "{}") for i in range(n_i)),
        )  # fmt: skip
        iids = list(
            Instruction.objects.filter(dataset=dataset)
            .order_by("position")
            .values_list("pk", flat=True)
        )
        copy_rows(
            Response,
            ["instruction_id", "model_name", "text", "metadata", "created_at"],
            (
                (iid, f"model-{m:02d}", "Synthetic answer.", "{}", now)
                for iid in iids
                for m in range(PROFILE_MODELS)
            ),
        )
        rids = list(
            Response.objects.filter(instruction__dataset=dataset)
            .order_by("instruction__position", "model_name")
            .values_list("pk", flat=True)
        )
        judge, judge_na, human = _profiles_data(len(rids), len(skills))
        run = JudgeRun.objects.create(
            dataset=dataset,
            name="bench judge (synthetic)",
            kind=JudgeRun.Kind.IMPORTED,
            status=JudgeRun.Status.COMPLETED,
        )
        copy_rows(
            JudgeScore,
            ["run_id", "response_id", "skill_id", "sample_index", "score",
             "rationale", "created_at"],
            ((run.pk, rid, sk.pk, 0, None if judge_na[r, s] else int(judge[r, s]),
              "", now)
             for r, rid in enumerate(rids) for s, sk in enumerate(skills)),
        )  # fmt: skip
        campaign = Campaign.objects.create(
            name="leaderboard-bench campaign (synthetic)", dataset=dataset, overlap=1
        )
        rated = rids[: PROFILE_HUMAN_INSTRUCTIONS * PROFILE_MODELS]
        copy_rows(
            CampaignItem,
            ["campaign_id", "response_id", "target", "submitted", "reserved",
             "open_slots", "position"],
            ((campaign.pk, rid, 1, 1, 0, 0, k) for k, rid in enumerate(rated)),
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
            ((campaign.pk, items[rid], rid, rater.pk, "submitted", "bench", now, now,
              now, "", "", "", "") for rid in rated),
        )  # fmt: skip
        aid = dict(
            Assignment.objects.filter(campaign=campaign).values_list(
                "response_id", "pk"
            )
        )
        copy_rows(
            HumanScore,
            ["assignment_id", "skill_id", "score", "rationale", "created_at",
             "updated_at"],
            ((aid[rid], sk.pk, int(human[r, s]), "", now, now)
             for r, rid in enumerate(rated) for s, sk in enumerate(skills)),
        )  # fmt: skip
    return dataset, campaign, run


def bench_profiles(args) -> None:
    """The profiles section (module doc); needs Django set up on the scratch DB."""
    from django.core.cache import cache
    from django.db import connection

    from analysis.selectors.agreement.inputs import load_inputs
    from analysis.selectors.skill_profiles import skill_profiles
    from annotation.models import HumanScore, Skill
    from annotation.services.rubrics import rubric_get_default
    from judging.models import JudgeScore
    from tests.factories import UserFactory

    skills = list(
        Skill.objects.filter(rubric=rubric_get_default()).order_by("position")
    )
    rater = UserFactory(username="bench-profiles-rater", role="rater")
    t0 = time.perf_counter()
    dataset, campaign, run = build_profiles(skills, rater)
    n_j = JudgeScore.objects.filter(run=run).count()
    n_h = HumanScore.objects.filter(assignment__campaign=campaign).count()
    print(
        f"profiles: {n_j:,} synthetic judge scores (1 run), {n_h:,} synthetic human "
        f"scores, {PROFILE_INSTRUCTIONS:,} instructions x {PROFILE_MODELS} models x "
        f"{len(skills)} criteria, written in {time.perf_counter() - t0:.1f} s; "
        f"{args.boot} resamples"
    )
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
        return skill_profiles(**kwargs)

    cold()  # warm imports and the database's caches
    if getattr(args, "profile", 0):
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(cold)
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
    cold_s, times = median_time(cold, args.repeat)
    load_s, _ = median_time(
        lambda: load_inputs(dataset, [campaign.pk], [run.pk], "", ""), args.repeat
    )
    result = skill_profiles(**kwargs)
    cached_s, _ = median_time(lambda: skill_profiles(**kwargs), 20)
    met = "met" if cold_s < TARGET_PROFILES_COLD else "MISSED"
    print(
        f"  cold   {cold_s:.3f} s median of {[round(t, 3) for t in times]} "
        f"(target < {TARGET_PROFILES_COLD:.0f} s: {met}; "
        f"{cold_s / TARGET_PROFILES_COLD:.2f} of the target)"
    )
    print(f"         loading {load_s:.3f} s, computing {cold_s - load_s:.3f} s")
    print(
        f"  cached {1000 * cached_s:.1f} ms median of 20 "
        f"(cold / cached = {cold_s / cached_s:.0f}x)"
    )
    overall = next(r for r in result["rows"] if r["key"] == "overall")
    best = min(overall["sources"]["humans"]["models"], key=lambda e: e["rank"] or 99)
    print(
        f"  check  {len(result['rows'])} rows, {len(result['models'])} models, "
        f"{len(result['sources'])} sources; humans' overall #1 {best['model']} "
        f"{best['mean']:.2f} [{best['ci'][0]:.2f}, {best['ci'][1]:.2f}] "
        f"(n={best['n']}, {best['n_instructions']} instructions)"
    )


SECTIONS = {"pairwise": bench_pairwise, "profiles": bench_profiles}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--section", choices=("pairwise", "profiles", "all"), default="all")
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also print the N costliest functions of one cold profiles run",
    )
    args = ap.parse_args()
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL server (see the docstring)")
    url, admin = scratch_database(base)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")
    import django

    django.setup()
    from django.core.management import call_command

    try:
        call_command("migrate", verbosity=0)
        chosen = list(SECTIONS) if args.section == "all" else [args.section]
        for name in chosen:
            if name not in SECTIONS:
                print(f"{name}: no such section in this file yet")
                continue
            SECTIONS[name](args)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(admin, url)


if __name__ == "__main__":
    main()
