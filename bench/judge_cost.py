"""Recorded judge cost: today's prompt layout, synchronously, against the
cache-friendly layout through the Batch API (issue 36).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/judge_cost.py [--limit N] [--latency-ms 2]

The FLASK release (evaluation set and every model's outputs) is imported into a
scratch database and judged twice, pointwise, by the local fake server
(`judging.fake_server`) reporting cached prompt tokens as OpenAI does
(`judging.fake_usage`: prefixes of 1,024 tokens and more, in 128-token steps, once
seen; its prefix cache is emptied between the two runs), at prices with cached input
at 10% of the input price and a 50% Batch API discount (GPT-5's list prices:
$1.25 / $0.125 / $10 per million input / cached input / output tokens):

  1. old:  the config's `prompt_layout` "template" (the built-in template's order:
           the response, then how to reply), calls made one by one;
  2. new:  `prompt_layout` "cache_friendly" (the judge's instructions, the WHOLE
           rubric of the dataset and how to reply first, the same text for every
           call; then which criteria this call scores, the request, the reference
           and the response last), through the Batch API
           (`judge_run_create(batch=True)`).

It prints both runs' recorded costs (the sum of `JudgeCall.cost`, each priced by
`judging.costs` from the usage the server reported), the cached share of input
tokens, the share of each run's cost that is output, the ratio new / old (target
<= 0.4) and whether every score is identical.

The Batch API path is built on another branch: when `judge_run_create` takes no
`batch` option here, the new leg runs synchronously, the bench says so, and it also
prints that leg's cost re-priced from the same recorded usage at the batch discount
(`costs.call_cost(batch=True)`), clearly marked as computed, not recorded.

Runs are driven in this process (Celery tasks eager); `--limit` judges only the
first N instructions (default: all 1,740; 15 models each). Each run's estimate
(made before it started) is printed under its recorded figures, with the cached
share it assumed.

Last measured (2026-12-07, the whole release, 25,500 calls a run, a loaded 2-core
machine): old $56.77 (19.4% of input cached: 15 answers to one long request share it;
output 45.1% of the cost), cache-friendly $21.26 (87.9% cached; output 60.3% of the
cost), ratio 0.374, all 76,485 scores identical. The old run's figure moves by a
few cents between runs: which calls a retry after a client timeout repeats changes
what the server had cached.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("FLASK_DEV", "1")
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from judge_throughput import import_flask_release, scratch_database  # noqa: E402

PRICES = {
    "price_input_per_m": Decimal("1.25"),
    "price_cached_input_per_m": Decimal("0.125"),
    "price_output_per_m": Decimal("10"),
    "batch_discount_percent": 50,
}
TARGET_RATIO = Decimal("0.4")


def main() -> None:  # noqa: PLR0915 - one bench, read top to bottom
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "flask-data"))
    parser.add_argument("--limit", type=int, default=None, help="instructions")
    parser.add_argument("--latency-ms", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    base_db = os.environ.get("DATABASE_URL", "")
    if not base_db.startswith("postgres"):
        sys.exit("set DATABASE_URL (postgres://...)")
    db_url, admin = scratch_database(base_db)
    os.environ.update(
        {
            "DATABASE_URL": db_url,
            "DJANGO_SETTINGS_MODULE": "flaskapp.settings",
            "LOG_LEVEL": "WARNING",
            "JUDGE_DRIVERS_PER_RUN": "1",
        }
    )
    import django

    django.setup()
    import httpx
    from django.conf import settings
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db.models import Sum

    from flaskapp.celery import app
    from judging import costs
    from judging.fake_server import FakeServerConfig, start_fake_server_in_thread
    from judging.models import JudgeCall, JudgeRun, JudgeScore
    from judging.services.configs import judge_config_create
    from judging.services.runs import judge_run_create, judge_run_start

    app.conf.task_always_eager = True  # the driver runs in this process
    settings.REDIS_URL = ""  # its in-process limiter: nothing else shares the judge
    base_url, stop_server = start_fake_server_in_thread(
        FakeServerConfig(latency_ms=args.latency_ms, prefix_cache=True)
    )
    server = base_url.removesuffix("/v1")
    try:
        call_command("migrate", verbosity=0)
        t0 = time.perf_counter()
        dataset = import_flask_release(Path(args.data))
        print(f"imported the FLASK release in {time.perf_counter() - t0:.1f} s")
        user = User.objects.create_user("bench-cost", password="x", is_superuser=True)
        user.groups.add(Group.objects.get(name="researcher"))
        from flaskapp.workspaces import membership_ensure

        membership_ensure(workspace=dataset.workspace, user=user, role="researcher")
        batch_path = "batch" in inspect.signature(judge_run_create).parameters

        def judge(layout: str, batch: bool) -> JudgeRun:
            httpx.post(f"{server}/reset")  # an empty prefix cache for each run
            config = judge_config_create(
                user=user,
                operator=True,
                name=f"cost-{layout}",
                base_url=base_url,
                model="fake-judge",
                is_dev_server=True,
                max_concurrency=args.concurrency,
                prompt_layout=layout,
                **PRICES,
            )
            extra = {"batch": True} if batch else {}
            run = judge_run_create(
                config=config,
                dataset=dataset,
                user=user,
                instruction_limit=args.limit,
                **extra,
            )
            started = time.perf_counter()
            judge_run_start(run=run, user=user)
            run.refresh_from_db()
            print(
                f"  {layout:<14} {'batch' if batch else 'sync':<5} "
                f"{run.total_calls:,} calls, {run.get_status_display().lower()} in "
                f"{time.perf_counter() - started:.1f} s"
            )
            return run

        print("judging:")
        old = judge("template", batch=False)
        new = judge("cache_friendly", batch=batch_path)

        def figures(run: JudgeRun) -> dict:
            sums = JudgeCall.objects.filter(run=run).aggregate(
                cost=Sum("cost"),
                input=Sum("input_tokens"),
                cached=Sum("cached_input_tokens"),
                output=Sum("output_tokens"),
            )
            out = {k: v or 0 for k, v in sums.items()}
            # Prompts that can be cached at all (OpenAI: 1,024 tokens and more).
            out["long"] = JudgeCall.objects.filter(
                run=run, input_tokens__gte=1024
            ).count()
            out["calls"] = run.total_calls
            return out

        a, b = figures(old), figures(new)
        for name, f, run in (("old layout, sync", a, old), ("cache-friendly", b, new)):
            share = 100 * f["cached"] / f["input"] if f["input"] else 0
            # What the run's output tokens cost at its prices (the same rule).
            output_cost = costs.call_cost(
                prices=costs.Prices.from_snapshot(run.settings_snapshot),
                input_tokens=0,
                output_tokens=f["output"],
                batch=bool(run.settings_snapshot.get("batch")),
            )
            out_share = 100 * output_cost / f["cost"] if f["cost"] else 0
            print(
                f"{name:<18} recorded cost ${f['cost']:.4f}  input {f['input']:,} "
                f"({share:.1f}% cached)  output {f['output']:,} "
                f"({out_share:.1f}% of the cost)  prompts of "
                f">= 1,024 tokens: {f['long']:,} of {f['calls']:,}"
            )
            estimate = run.estimate or {}
            assumed = (estimate.get("assumes") or {}).get("cached_input_share", 0)
            print(
                f"{'':<18} estimated before the run ${float(estimate.get('cost', 0)):.4f}"
                f"  input {estimate.get('input_tokens', 0):,} "
                f"({100 * assumed:.1f}% assumed cached)"
            )
        ratio = b["cost"] / a["cost"] if a["cost"] else Decimal(0)
        if batch_path:
            print(f"ratio (recorded) new / old: {ratio:.3f} (target <= {TARGET_RATIO})")
        else:
            print(
                "the batch leg needs the Batch API path (judge_run_create(batch=True)), "
                "not on this branch: the cache-friendly run went synchronously"
            )
            print(f"ratio (recorded, both sync) new / old: {ratio:.3f}")
            prices = costs.Prices.from_snapshot(new.settings_snapshot)
            projected = sum(
                costs.call_cost(
                    prices=prices,
                    input_tokens=c.input_tokens,
                    cached_input_tokens=c.cached_input_tokens,
                    output_tokens=c.output_tokens,
                    batch=True,
                )
                for c in JudgeCall.objects.filter(run=new).only(
                    "input_tokens", "cached_input_tokens", "output_tokens"
                )
            )
            print(
                f"computed, not recorded: the cache-friendly run at the batch discount "
                f"${projected:.4f}; ratio {projected / a['cost']:.3f} "
                f"(target <= {TARGET_RATIO})"
            )

        def scores(run: JudgeRun) -> dict:
            return {
                (r, s, i): v
                for r, s, i, v in JudgeScore.objects.filter(run=run).values_list(
                    "response_id", "skill_id", "sample_index", "score"
                )
            }

        sa, sb = scores(old), scores(new)
        same = sa == sb
        if not same:
            differ = [k for k in sa.keys() | sb.keys() if sa.get(k) != sb.get(k)]
            print(f"{len(differ):,} scores differ; for example:")
            for r, s_, i in sorted(differ)[:5]:
                print(
                    f"  response {r} skill {s_} sample {i}: {sa.get((r, s_, i))} "
                    f"then {sb.get((r, s_, i))}"
                )
        print(
            f"scores: {len(sa):,} and {len(sb):,}; every score identical: "
            f"{'yes' if same else 'NO'}"
        )
        if not same or old.status != JudgeRun.Status.COMPLETED:
            raise SystemExit(1)
    finally:
        stop_server()
        from django.db import connections

        connections.close_all()
        import psycopg

        with psycopg.connect(admin, autocommit=True) as conn:
            name = db_url.rsplit("/", 1)[1]
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
