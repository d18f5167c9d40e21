"""The judge workbench in Chromium: a researcher makes the dev / test split, creates an
experiment of two runs from the form, reads each run against the humans and the
baseline on the development split, evaluates on the test split (logged, with a
reason) and sees the look counted; the pages pass an axe scan; a rater is refused."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from judging.models import EvalSplit, Experiment, TestSplitLook
from tests.analysis.agreement_data import make_agreement_setup
from tests.browser.conftest import login, shot
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

N = 24
MODELS = ("alpha", "beta")
SKILLS = ("readability", "factuality")


@pytest.fixture
def setup(transactional_db):
    researcher = UserFactory(username="wb-researcher", role="researcher")
    human = {
        (i, m, s): [1 + (i + k + j) % 5, 1 + (i + j) % 5]
        for i in range(N)
        for k, m in enumerate(MODELS)
        for j, s in enumerate(SKILLS)
    }

    def judge(shift):
        return {
            (i, m, s): 1 + (i + k + j + (shift if i % 3 == 0 else 0)) % 5
            for i in range(N)
            for k, m in enumerate(MODELS)
            for j, s in enumerate(SKILLS)
        }

    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge(0), judge(2)],
        n_instructions=N,
        models=MODELS,
        n_raters=2,
        name="Workbench set",
    )
    return researcher, s


def _axe(page):
    from axe_playwright_python.sync_playwright import Axe

    violations = Axe().run(page).response["violations"]
    failing = [v for v in violations if v["impact"] in ("serious", "critical")]
    assert not failing, [(v["id"], v["nodes"][0]["target"]) for v in failing]


def test_split_experiment_and_a_logged_test_look(page, live_server, setup):
    researcher, s = setup
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/datasets/{s.dataset.pk}/workbench/")
    page.get_by_label("Test share").fill("0.25")
    page.get_by_role("button", name="Make the split").click()
    expect(page.locator("#split-facts")).to_contain_text("Test (locked)")
    assert EvalSplit.objects.filter(dataset=s.dataset).exists()
    _axe(page)
    shot(page, "workbench-split")

    page.goto(f"{live_server.url}/experiments/")
    page.get_by_label("Name").fill("prompt v1 vs v2")
    for run in s.runs:
        page.locator(f"input[name=runs][value='{run.pk}']").check()
    page.get_by_role("button", name="Create").click()
    experiment = Experiment.objects.get(name="prompt v1 vs v2")
    page.wait_for_url(f"{live_server.url}/experiments/{experiment.pk}/")
    table = page.locator("#experiment-runs")
    expect(table).to_contain_text("judge A")
    expect(table).to_contain_text("baseline")
    expect(page.get_by_role("heading", name="Items: development split")).to_be_visible()
    _axe(page)
    shot(page, "experiment-dev")

    page.get_by_label("Why evaluate on the test split now?").fill("final check")
    page.get_by_role("button", name="Evaluate on the test split (logged)").click()
    expect(page.get_by_role("heading", name="Items: test split")).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("final check")
    look = TestSplitLook.objects.get()
    assert look.user == researcher and look.experiment == experiment
    shot(page, "experiment-test")

    page.goto(f"{live_server.url}/datasets/{s.dataset.pk}/workbench/")
    expect(page.locator("#split-facts")).to_contain_text("1 time")
    expect(page.locator("#test-looks")).to_contain_text("final check")


def test_a_rater_is_refused_the_workbench(page, live_server, setup):
    _, s = setup
    login(page, live_server, s.raters[0])
    for path in (f"/datasets/{s.dataset.pk}/workbench/", "/experiments/"):
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 403


def test_the_reading_pages_of_a_run_pass_axe(page, live_server, setup):
    from judging.services.prompts import prompt_get_builtin

    researcher, s = setup
    run = s.runs[1]
    response = s.responses[(0, "alpha")]
    template = prompt_get_builtin("pointwise")
    login(page, live_server, researcher)
    for path, name, text in (
        (f"/runs/{run.pk}/disagreements/", "run-disagreements", "rater 1"),
        (f"/runs/{run.pk}/consistency/", "run-consistency", "Self-consistency"),
        (f"/prompts/{template.pk}/preview/?response={response.pk}", "prompt-preview",
         "input tokens"),
    ):  # fmt: skip
        result = page.goto(f"{live_server.url}{path}")
        assert result.status == 200, path
        expect(page.locator("main")).to_contain_text(text)
        _axe(page)
        shot(page, name)
