"""A researcher opens a yes/no classification run and a critique run in Chromium:
the classification badge, the label counts by name and the critiques are on the
page (runs made for real against the fake judge)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from judging.models import JudgeCritique, JudgeScore
from tests.browser.conftest import login, shot
from tests.judging.rubric_data import HELPSTEER, YES_NO, dataset_on
from tests.judging.test_any_rubric_runs import (  # noqa: F401 (fixture)
    eager_tasks,
    make_config,
    run_to_end,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.usefixtures("eager_tasks")
def test_classification_and_critique_runs_in_the_browser(
    page,
    live_server,
    fake_server,
):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, output_mode="json_schema")
    labels = run_to_end(
        config, user, dataset_on(YES_NO, instructions=3), name="Consistency labels"
    )
    critiques = run_to_end(
        config,
        user,
        dataset_on(HELPSTEER, instructions=2),
        kind="critique",
        name="Critiques of two",
    )
    login(page, live_server, user)

    page.goto(f"{live_server.url}/runs/")
    row = page.locator("tr", has_text="Consistency labels")
    expect(row.locator(".badge-kind")).to_have_text("classification")
    other = page.locator("tr", has_text="Critiques of two")
    expect(other.locator(".badge-kind")).to_have_text("open-ended critiques")
    shot(page, "any-rubric-run-list")

    page.goto(f"{live_server.url}/runs/{labels.pk}/")
    counts = page.locator("#label-counts")
    expect(counts).to_be_visible()
    yes = JudgeScore.objects.filter(run=labels, score=0).count()
    expect(counts.locator("th")).to_have_text(["Yes", "No"])  # N/A not allowed
    expect(counts.locator("td").first).to_have_text(str(yes))
    expect(page.locator(".subtitle")).to_contain_text("Classification")
    shot(page, "any-rubric-classification-run")

    page.goto(f"{live_server.url}/runs/{labels.pk}/results/")
    chips = page.locator(".score-chip")
    expect(chips).to_have_count(6)
    for text in chips.all_inner_texts():
        assert text.split()[-1] in ("Yes", "No")
    shot(page, "any-rubric-classification-results")

    page.goto(f"{live_server.url}/runs/{critiques.pk}/")
    items = page.locator("#run-critiques li")
    expect(items).to_have_count(4)
    first = JudgeCritique.objects.filter(run=critiques).first()
    expect(page.locator("#run-critiques")).to_contain_text(first.text[:50])
    shot(page, "any-rubric-critique-run")

    page.goto(f"{live_server.url}/runs/{critiques.pk}/results/")
    expect(page.locator(".critique-text")).to_have_count(4)
    shot(page, "any-rubric-critique-results")

    # The run form offers critique runs and estimates them.
    page.goto(
        f"{live_server.url}/runs/new/?config={config.pk}"
        f"&dataset={critiques.dataset_id}&kind=critique"
    )
    expect(page.locator("#id_kind")).to_have_value("critique")
    # The same estimate as the critique run made over the same responses recorded.
    tokens = critiques.estimate["input_tokens"] + critiques.estimate["output_tokens"]
    expect(page.locator("#run-estimate")).to_contain_text(f"{tokens:,}")
    shot(page, "any-rubric-critique-run-form")
