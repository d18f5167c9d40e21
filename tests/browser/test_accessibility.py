"""An axe-core scan (axe-playwright-python) of every role's main pages in Chromium:
no violation of impact "serious" or "critical" (WCAG 2 A/AA rules and axe's best
practices: contrast, labels, landmarks, names of links and buttons, table headers).

Fast by construction: the data is built once for the module and served by one live
server, each role logs in once (one browser context per role) and each page is one
parametrized test that opens a tab, scans it and closes it.

The data is committed once, outside the per-test transactions, and served by the
module's own live server (pytest-django's `live_server` would make every test
transactional and flush the data after the first one). When the module ends it
flushes the tables and restores the built-in rows, as a transactional test does.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import PASSWORD, SKILLS

# `django_db` only so that the test database is set up; the tests themselves do not
# touch it (the module's live server reads what `site` committed).
pytestmark = [pytest.mark.browser, pytest.mark.django_db]

# Violations of these impacts fail the scan; "moderate" and "minor" are reported only.
FAILING = {"serious", "critical"}

RATER_PAGES = [
    ("home", "/"),
    ("rate list", "/rate/"),
    ("password", "/account/password/"),
    ("pointwise rating", "/rate/{campaign}/"),
    ("rating history", "/rate/{campaign}/mine/"),
    ("rating review", "/rate/assignments/{submitted}/"),
    ("pairwise list", "/pairwise/"),
    ("pairwise comparison", "/pairwise/compare/{pairwise}/"),
    ("pairwise history", "/pairwise/compare/{pairwise}/mine/"),
]
RESEARCHER_PAGES = [
    ("home", "/"),
    ("datasets", "/datasets/"),
    ("dataset", "/datasets/{dataset}/"),
    ("instruction", "/instructions/{instruction}/"),
    (
        "dataset responses",
        "/datasets/{dataset}/responses/?run={run}&skill=factuality&disagree=2",
    ),
    ("rubrics", "/rubrics/"),
    ("rubric", "/rubrics/{rubric}/"),
    ("rubric new", "/rubrics/new/"),  # issue 37: the form builder and the preview
    ("campaigns", "/campaigns/"),
    ("campaign new", "/campaigns/new/"),
    ("campaign", "/campaigns/{agree_campaign}/"),
    ("pairwise campaign", "/pairwise/campaigns/{pairwise}/"),
    ("raters", "/raters/"),
    ("agreement list", "/agreement/"),
    ("agreement dashboard", "/agreement/{dataset}/"),
    (
        "agreement results",
        "/agreement/{dataset}/?campaign={agree_campaign}&run={run}&run={run_b}"
        "&n_boot=50",
    ),
    (
        "agreement drill-down",
        "/agreement/{dataset}/skills/factuality/?campaign={agree_campaign}&run={run}",
    ),
    ("meta-evaluation list", "/metaeval/"),
    ("meta-evaluation", "/metaeval/{pref_dataset}/?n_boot=50"),
    ("judges", "/judges/"),
    ("judge", "/judges/{judge}/"),
    ("prompts", "/prompts/"),
    ("runs", "/runs/"),
    ("run", "/runs/{run}/"),
    ("run results", "/runs/{run}/results/"),
    ("run new", "/runs/new/"),
    ("run import", "/runs/import/"),
    ("upload", "/upload/"),
]
ADMIN_PAGES = [
    *RESEARCHER_PAGES,
    ("imports", "/imports/"),
    ("import new", "/imports/new/"),
    ("rubric import", "/rubrics/import/"),
    ("judge new", "/judges/new/"),
    ("workspace notifications", "/workspaces/{workspace}/notifications/"),
]
CASES = [
    pytest.param(role, url, id=f"{role}-{name}")
    for role, pages in (
        ("rater", RATER_PAGES),
        ("researcher", RESEARCHER_PAGES),
        ("admin", ADMIN_PAGES),
    )
    for name, url in pages
]


def build_site():
    """Users of each role and something on every page: a rating campaign with a
    submitted rating and one being rated, a pairwise campaign being compared, an
    agreement set (campaign + two judge runs), a preference set, a judge config."""
    from annotation.services.pairwise import pairwise_next
    from annotation.services.rating import assignment_next, rating_submit
    from judging.models import JudgeConfig
    from tests.analysis.agreement_data import make_agreement_setup
    from tests.analysis.test_views_agreement import MODELS, N_INSTR, score_tables
    from tests.browser.conftest import sky_pairwise_campaign, sky_rating_campaign
    from tests.factories import UserFactory
    from tests.judging.pairwise_data import make_pref_setup

    users = {
        role: UserFactory(username=f"axe-{role}", role=role)
        for role in ("rater", "researcher", "admin")
    }
    rater = users["rater"]
    campaign = sky_rating_campaign(raters=[rater])
    first = assignment_next(campaign=campaign, rater=rater).assignment
    rating_submit(
        assignment_id=first.pk,
        rater=rater,
        scores={key: 4 for key in SKILLS},
        rationales={SKILLS[0]: "Clear, with one step missing."},
    )
    pairwise = sky_pairwise_campaign(raters=[rater])
    pairwise_next(campaign=pairwise, rater=rater)
    human, judge_a, judge_b = score_tables()
    agreement = make_agreement_setup(
        users["researcher"],
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="axe-agree",
        difficulty=[1, 1, 2, 2, 3, 3, 4, 4, 5, None],
    )
    pref_dataset, *_ = make_pref_setup("axe-pref")
    judge = JudgeConfig.objects.create(
        name="axe judge", base_url="http://127.0.0.1:9/v1", model="judge-model"
    )
    ids = {
        "campaign": campaign.pk,
        "submitted": first.pk,
        "rubric": campaign.dataset.rubric_id,
        "pairwise": pairwise.pk,
        "dataset": agreement.dataset.pk,
        "instruction": agreement.responses[(0, MODELS[0])].instruction_id,
        "agree_campaign": agreement.campaign.pk,
        "run": agreement.runs[0].pk,
        "run_b": agreement.runs[1].pk,
        "pref_dataset": pref_dataset.pk,
        "judge": judge.pk,
        "workspace": agreement.dataset.workspace_id,
    }
    return users, ids


@pytest.fixture(scope="module")
def site(django_db_setup, django_db_blocker, browser):
    """The module's data and live server; the database stays open to the server's
    thread until the module ends, then is emptied (built-in rows restored).

    After `browser`: once Playwright's loop runs in this thread, Django's connection
    handler (a context-local) hands the tests another connection object. On an
    in-memory SQLite database that is a second connection, whose test transaction
    (BEGIN IMMEDIATE) locked the server's writes out ("database table is locked":
    a 503 on every page that writes). Opened after it, the server shares the
    tests' connection, as pytest-django intends."""
    from django.contrib.contenttypes.models import ContentType
    from django.core.management import call_command
    from pytest_django.live_server_helper import LiveServer

    from annotation.bootstrap import ensure_builtin_data

    def empty():
        call_command("flush", interactive=False, verbosity=0)
        ensure_builtin_data()
        ContentType.objects.clear_cache()  # the flush renumbered the content types

    with django_db_blocker.unblock():
        empty()
        users, ids = build_site()
        server = LiveServer("localhost")
        try:
            yield server.url, users, ids
        finally:
            server.stop()
            empty()


@pytest.fixture(scope="module")
def contexts(site, browser):
    """One logged-in browser context per role."""
    url, users, _ = site
    opened = {}
    for role, user in users.items():
        context = browser.new_context(viewport={"width": 1366, "height": 900})
        context.set_default_timeout(15_000)
        page = context.new_page()
        page.goto(f"{url}/login/")
        page.get_by_label("Username").fill(user.get_username())
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{url}/")
        page.close()
        opened[role] = context
    yield opened
    for context in opened.values():
        context.close()


def describe(violations: list[dict]) -> str:
    """One line per violation with up to three of its targets, then why the first
    target fails (axe's summary: the colours and ratio of a contrast failure...)."""
    lines = []
    for v in violations:
        targets = [" ".join(map(str, n["target"])) for n in v["nodes"][:3]]
        lines.append(
            f"{v['id']} ({v['impact']}): {v['help']} - {len(v['nodes'])} node(s): "
            + "; ".join(targets)
        )
        summary = v["nodes"][0].get("failureSummary", "") if v["nodes"] else ""
        if summary:
            lines.append("    " + " ".join(summary.split()))
    return "\n".join(lines)


@pytest.mark.parametrize(("role", "url"), CASES)
def test_page_has_no_serious_accessibility_violation(site, contexts, role, url):
    from axe_playwright_python.sync_playwright import Axe

    base, _, ids = site
    page = contexts[role].new_page()
    try:
        response = page.goto(base + url.format(**ids))
        assert response is not None and response.status == 200, url
        violations = Axe().run(page).response["violations"]
    finally:
        page.close()
    failing = [v for v in violations if v["impact"] in FAILING]
    if violations:
        print(f"{role} {url}:\n{describe(violations)}")
    assert not failing, f"{role} {url}:\n{describe(failing)}"
