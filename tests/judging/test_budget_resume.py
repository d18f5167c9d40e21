"""Spend caps (issue 36): a cap below one call's estimate is refused naming
``budget`` through the API too, nothing made; a run stopped at its budget says on
its page what it spent and what finishing it would take, and resumes from the page
with a higher cap (a too-low one refused naming the budget, nothing changed)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.urls import reverse

from judging.models import JudgeRun
from judging.services import budgets
from judging.services.runs import judge_run_create, judge_run_start
from tests.judging.test_costs import long_dataset
from tests.judging.test_execution import eager_tasks, make_config

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["eager_tasks"]  # a fixture used below


def capped_setup(fake_server):
    config, user = make_config(
        fake_server(latency_ms=1),
        price_input_per_m=1000,
        price_output_per_m=2000,
        max_tokens=300,
        max_concurrency=1,
    )
    dataset = long_dataset(n_instructions=3, models=("m-a",))
    probe = judge_run_create(config=config, dataset=dataset, user=user)
    per_call = budgets.run_call_estimate(probe)
    probe.delete()
    return config, user, dataset, per_call


def test_the_api_refuses_a_cap_below_one_calls_estimate_naming_budget(
    eager_tasks, fake_server, api_client_for
):
    config, user, dataset, per_call = capped_setup(fake_server)
    answer = api_client_for(user).post(
        "/api/runs/",
        {
            "config": config.pk,
            "dataset": dataset.pk,
            "budget": str((per_call / 2).quantize(Decimal("0.0001"))),
        },
        format="json",
    )
    assert answer.status_code == 400
    body = answer.json()
    assert "budget" in str(body) and "no room for one call" in str(body)
    assert not JudgeRun.objects.filter(dataset=dataset).exists()


def test_a_run_stopped_at_its_budget_says_what_finishing_takes_and_resumes_from_its_page(
    eager_tasks, fake_server, client_for
):
    config, user, dataset, per_call = capped_setup(fake_server)
    cap = (per_call * Decimal("1.2")).quantize(Decimal("0.0001"))
    run = judge_run_create(config=config, dataset=dataset, user=user, budget=cap)
    judge_run_start(run=run, user=user)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.STOPPED_BUDGET
    pending = run.calls.filter(status="pending").count()
    assert pending > 0
    client = client_for(user)
    url = reverse("judging:run-detail", args=[run.pk])

    text = client.get(url).content.decode()
    summary = budgets.budget_summary(run)
    assert summary["to_finish"] == per_call * pending
    notice = text.split('id="run-stopped-budget"', 1)[1].split("</div>", 1)[0]
    assert f"{pending} call" in notice and "still pending" in notice
    assert "Resume" in notice and "higher budget" in notice
    field = re.search(r'<input type="number" name="budget"[^>]*>', text).group(0)
    suggested = Decimal(re.search(r'value="([^"]+)"', field).group(1))
    assert suggested == summary["suggested"] >= run.budget + 0 and (
        suggested >= summary["spent"] + per_call * pending
    )

    # A cap that leaves no room: refused naming the budget; nothing changes.
    refused = client.post(
        reverse("judging:run-start", args=[run.pk]), {"budget": str(cap)}, follow=True
    )
    assert "budget" in refused.content.decode()
    assert "no room for one call" in refused.content.decode()
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.STOPPED_BUDGET and run.budget == cap

    # The suggested cap finishes it.
    client.post(reverse("judging:run-start", args=[run.pk]), {"budget": str(suggested)})
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED and run.budget == suggested
    assert sum(run.calls.values_list("cost", flat=True)) <= suggested
