"""Pages: server time of every role's main pages on the FLASK release.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/6 \\
        .venv/bin/python bench/pages_all.py [--instructions 100] [--repeat 5] [--keep]

The data of `bench/pages.py` (a scratch PostgreSQL database, the FLASK release
imported with `manage.py import_flask`, 3 raters' and 3 judge runs' scores on the
first --instructions instructions, written with COPY), plus a pairwise campaign of
--pairs sampled pairs with one synthetic judge run's verdicts in both orders and
imported human votes (for the meta-evaluation page), a rater in both campaigns with
one item open in each, a judge config, and an owner of the dataset's workspace
(its settings, audit log, keys, bulk accounts and upload pages, issue 35).

Measured in-process through Django's test client (middleware, views, templates and
queries; no network), logged in as each role: the median over --repeat requests
after one warm-up request, and the number of queries of each. Targets (issue 13):
every page < 300 ms, except a cold agreement computation; the agreement dashboard
with its defaults, cached, < 150 ms; a slice switch or a drill-down of the dashboard
(htmx fragments) < 400 ms cold. "cold" rows clear the cache before every request;
the slice switch and the drill-down then load the dashboard (untimed) first, as
the user did, so only their own computation is cold.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("FLASK_DEV", "1")
# The bench asks each heavy page (statistics, fits) a dozen times in a row: the
# product's heavy-request throttle (30 a minute per user) would answer 429 and be
# timed instead of the page.
os.environ.setdefault("THROTTLE_HEAVY_RATE", "100000/min")
sys.path.insert(0, str(ROOT))

from bench.pages import release_database, write_scores  # noqa: E402
from bench.scale import DEFAULT_DATA  # noqa: E402

PAGE_MS, CACHED_DASHBOARD_MS, COLD_FRAGMENT_MS = 300.0, 150.0, 400.0
HX = {"HX-Request": "true", "HX-Target": "agreement-results"}


def add_pairwise(dataset, researcher, rater, pairs: int):
    """A pairwise campaign of `pairs` sampled pairs, a synthetic judge run's verdicts
    in both orders and one imported human vote per pair. Returns the campaign."""
    from annotation.models import HumanPreference, PreferencePair
    from annotation.services.campaign_spec import CampaignSpec, PairPolicy
    from annotation.services.campaigns import campaign_create
    from judging.models import JudgeRun, PairwiseVerdict

    campaign = campaign_create(
        spec=CampaignSpec(
            name="pages bench pairs",
            dataset=dataset,
            raters=[rater],
            pairs=PairPolicy(mode="sample", sample=pairs),
        ),
        created_by=researcher,
    )
    pair_ids = list(
        PreferencePair.objects.filter(dataset=dataset).values_list("pk", flat=True)
    )
    labels = ("1", "2", "tie")
    HumanPreference.objects.bulk_create(
        HumanPreference(
            pair_id=pk, label=labels[pk % 3], origin="imported", voter="bench"
        )
        for pk in pair_ids
    )
    run = JudgeRun.objects.create(
        dataset=dataset,
        name="pages bench pairwise judge (synthetic)",
        kind=JudgeRun.Kind.IMPORTED,
        status=JudgeRun.Status.COMPLETED,
    )
    raw = {"1": "A", "2": "B", "tie": "tie"}
    verdicts = []
    for pk in pair_ids:
        for order, shift in (("ab", 0), ("ba", pk % 2)):
            verdict = labels[(pk + shift) % 3]
            shown = (
                raw[verdict]
                if order == "ab"
                else {"A": "B", "B": "A"}.get(raw[verdict], "tie")
            )
            verdicts.append(
                PairwiseVerdict(
                    run=run,
                    pair_id=pk,
                    order=order,
                    verdict_raw=shown,
                    verdict=verdict,
                    rationale="synthetic",
                )
            )
    PairwiseVerdict.objects.bulk_create(verdicts)
    return campaign


def measure(client, url: str, repeat: int, *, headers=None, cold=False):
    """(median ms, query counts seen, status) over `repeat` requests after a warm-up.

    `cold`: True clears the cache before each request; a URL clears it and then
    requests that URL (untimed) first, as a user opens the dashboard before they
    switch a slice or open a drill-down."""
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    headers = headers or {}
    client.get(url, headers=headers)  # warm: templates compiled, connection open
    times, counts, status = [], set(), set()
    for _ in range(repeat):
        if cold:
            cache.clear()
            if isinstance(cold, str):
                client.get(cold)
        with CaptureQueriesContext(connection) as ctx:
            t0 = time.perf_counter()
            response = client.get(url, headers=headers)
            times.append((time.perf_counter() - t0) * 1000)
        counts.add(len(ctx.captured_queries))
        status.add(response.status_code)
    return statistics.median(times), counts, status


def pages(ids: dict) -> dict[str, list[tuple]]:
    """role -> [(label, url, target ms or None, headers, cold)]."""
    d, a = ids["dataset"], f"/agreement/{ids['dataset']}/"
    choice = f"?campaign={ids['campaign']}&run={ids['run']}&run={ids['run_b']}"
    rater = [
        ("home", "/"),
        ("rate list", "/rate/"),
        ("pointwise rating", f"/rate/{ids['campaign']}/"),
        ("rating history", f"/rate/{ids['campaign']}/mine/"),
        ("pairwise list", "/pairwise/"),
        ("pairwise comparison", f"/pairwise/compare/{ids['pairwise']}/"),
        ("pairwise history", f"/pairwise/compare/{ids['pairwise']}/mine/"),
    ]
    researcher = [
        ("home", "/"),
        ("datasets", "/datasets/"),
        ("dataset", f"/datasets/{d}/"),
        ("instruction", f"/instructions/{ids['instruction']}/"),
        (
            "dataset responses, filter",
            f"/datasets/{d}/responses/?run={ids['run']}&skill={ids['skill']}"
            "&disagree=2",
        ),
        ("rubrics", "/rubrics/"),
        ("campaigns", "/campaigns/"),
        ("campaign new", "/campaigns/new/"),
        ("campaign", f"/campaigns/{ids['campaign']}/"),
        ("pairwise campaign", f"/pairwise/campaigns/{ids['pairwise']}/"),
        ("raters", "/raters/"),
        ("agreement list", "/agreement/"),
        ("meta-evaluation list", "/metaeval/"),
        ("meta-evaluation", f"/metaeval/{d}/"),
        ("judges", "/judges/"),
        ("judge", f"/judges/{ids['judge']}/"),
        ("prompts", "/prompts/"),
        ("runs", "/runs/"),
        ("run", f"/runs/{ids['run']}/"),
        ("run results", f"/runs/{ids['run']}/results/"),
        ("run new", "/runs/new/"),
        ("run import", "/runs/import/"),
        # Issue 37's pages: the Results hub, the rubric builder, the item diff of two
        # runs, and the result pages the hub lists.
        ("results", "/results/"),
        ("rubric new (builder)", "/rubrics/new/"),
        ("run diff", f"/runs/{ids['run']}/diff/{ids['run_b']}/"),
        ("experiments", "/experiments/"),
        ("report", f"/report/{d}/"),
        ("reliability", f"/reliability/{ids['campaign']}/"),
        ("adjudication", f"/campaigns/{ids['campaign']}/adjudication/"),
        ("estimates", f"/estimates/{d}/"),
        ("leaderboard, pairwise", f"/leaderboard/{d}/pairwise/"),
        ("leaderboard, profiles", f"/leaderboard/{d}/profiles/"),
        ("probes", f"/metaeval/{d}/probes/"),
    ]
    admin = [
        ("imports", "/imports/"),
        ("import new", "/imports/new/"),
        ("rubric import", "/rubrics/import/"),
        ("judge new", "/judges/new/"),
    ]
    ws = ids["workspace"]
    owner = [
        ("workspaces", "/workspaces/"),
        ("workspace settings", f"/workspaces/{ws}/settings/"),
        ("workspace audit log", f"/workspaces/{ws}/audit/"),
        ("workspace keys", f"/workspaces/{ws}/keys/"),
        ("bulk accounts", f"/workspaces/{ws}/members/bulk/"),
        ("workspace notifications", f"/workspaces/{ws}/notifications/"),
        ("upload", "/upload/"),
        ("home (first-run checklist)", "/"),
    ]
    rows = {
        "rater": [(label, url, PAGE_MS, None, False) for label, url in rater],
        "researcher": [(label, url, PAGE_MS, None, False) for label, url in researcher],
        "admin": [(label, url, PAGE_MS, None, False) for label, url in admin],
        "owner": [(label, url, PAGE_MS, None, False) for label, url in owner],
    }
    rows["researcher"] += [
        ("agreement, defaults, cold", a, None, None, True),
        ("agreement, defaults, cached", a, CACHED_DASHBOARD_MS, None, False),
        ("agreement, chosen, cold", a + choice, None, None, True),
        ("agreement, chosen, cached", a + choice, CACHED_DASHBOARD_MS, None, False),
        (
            "agreement slice switch (htmx), cold",
            a + choice + "&slice=difficulty:3",
            COLD_FRAGMENT_MS,
            HX,
            a + choice,
        ),
        (
            "agreement drill-down (htmx), cold",
            f"{a}skills/{ids['skill']}/{choice}",
            COLD_FRAGMENT_MS,
            {"HX-Request": "true", "HX-Target": "agreement-disagreements"},
            a + choice,
        ),
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--instructions", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    with release_database(args.data, keep=args.keep) as dataset:
        from django.contrib.auth.models import Group, User
        from django.db import connection
        from django.test import Client

        from annotation.models import Campaign, Skill
        from annotation.services.campaigns import campaign_set_raters
        from annotation.services.pairwise import pairwise_next
        from annotation.services.rating import assignment_next
        from flaskapp.workspaces import membership_ensure
        from judging.models import JudgeConfig

        chosen, runs, researcher, skills_of = write_scores(dataset, args.instructions)
        campaign = Campaign.objects.get(name="pages bench")
        rater = User.objects.get(username="pages-rater-0")
        campaign_set_raters(
            campaign=campaign, raters=[*campaign.raters.all(), rater], user=researcher
        )
        pairwise = add_pairwise(dataset, researcher, rater, args.pairs)
        assignment_next(campaign=campaign, rater=rater)
        pairwise_next(campaign=pairwise, rater=rater)
        owner = User.objects.create_user("pages-owner")
        membership_ensure(workspace=dataset.workspace, user=owner, role="owner")
        admin = User.objects.create_user("pages-admin")
        admin.groups.add(Group.objects.get(name="admin"))
        judge = JudgeConfig.objects.create(
            name="pages bench judge", base_url="http://127.0.0.1:9/v1", model="m",
            workspace=dataset.workspace,
        )  # fmt: skip
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        # A server process holds its code, not this script's setup: move what the
        # setup left on the heap out of the collector's reach, as flaskapp/wsgi.py
        # does for the loaded application, so collections cost what they would.
        gc.collect()
        gc.freeze()
        ids = {
            "dataset": dataset.pk,
            "campaign": campaign.pk,
            "pairwise": pairwise.pk,
            "instruction": chosen[0],
            "run": runs[0],
            "run_b": runs[1],
            "skill": Skill.objects.get(pk=skills_of[chosen[0]][0]).key,
            "judge": judge.pk,
            "workspace": dataset.workspace_id,
        }
        users = {
            "rater": rater,
            "researcher": researcher,
            "admin": admin,
            "owner": owner,
        }
        print(
            f"{len(chosen)} instructions x 15 responses x 3 skills x (3 raters + 3 "
            f"runs) scored, {args.pairs} pairs; median of {args.repeat} requests:"
        )
        print(f"{'role':10} {'page':40} {'median ms':>9} {'queries':>9}  target")
        for role, rows in pages(ids).items():
            client = Client()
            client.force_login(users[role])
            for label, path, target, headers, cold in rows:
                ms, counts, status = measure(
                    client, path, args.repeat, headers=headers, cold=cold
                )
                queries = "/".join(str(n) for n in sorted(counts))
                if target is None:
                    verdict = "-"
                else:
                    verdict = f"< {target:.0f} ms: " + (
                        "meets" if ms < target else "MISSES"
                    )
                if status != {200}:
                    verdict += f"  (status {sorted(status)})"
                print(f"{role:10} {label:40} {ms:9.1f} {queries:>9}  {verdict}")


if __name__ == "__main__":
    main()
