"""An admin finds judge results and preferences imported from the command line in the
import history, at 1,440 and 800 px, and follows the record to the run it made."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from playwright.sync_api import expect

from annotation.models import ImportJob
from judging.models import JudgeRun
from tests.browser.conftest import login, shot
from tests.factories import UserFactory
from tests.judging.data import make_dataset

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def command(*args) -> None:
    call_command(*args, stdout=StringIO(), stderr=StringIO())


def test_history_lists_cli_judge_runs_and_preferences(page, live_server, tmp_path):
    admin = UserFactory(username="history-admin", role="admin")
    make_dataset(name="hist-set", instructions=2, models=("alpha", "beta"))
    good = tmp_path / "scores.csv"
    good.write_text(
        "id,model,skill,score\n1,alpha,Readability,4\n2,beta,Readability,2\n"
    )
    bad = tmp_path / "broken.csv"
    bad.write_text("id,model,skill,score\n7,alpha,Readability,4\n")
    votes = tmp_path / "votes.jsonl"
    votes.write_text(
        json.dumps(
            {"prompt": "Name a prime.", "response_1": "Seven.", "response_2": "Nine.",
             "label": 1, "model_1": "alpha", "model_2": "beta"}
        )
    )  # fmt: skip
    command("import_judge_run", str(good), "--dataset", "hist-set", "--name", "offline")
    with pytest.raises(CommandError):
        command("import_judge_run", str(bad), "--dataset", "hist-set")
    command("import_preferences", str(votes), "--dataset", "hist-prefs")
    run = JudgeRun.objects.get(name="offline")

    login(page, live_server, admin)
    for width in (1440, 1366, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/imports/")
        rows = page.locator("table tbody tr")
        expect(rows).to_have_count(3)
        expect(rows.get_by_text("Judge results (an imported run)")).to_have_count(2)
        expect(rows.get_by_text("Pairwise preferences")).to_have_count(1)
        expect(rows.get_by_text("command line")).to_have_count(3)
        # Nothing sideways: the history fits the window.
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shot(page, f"imports-{width}")

    refused = ImportJob.objects.get(status="invalid")
    page.goto(f"{live_server.url}/imports/{refused.pk}/")
    expect(page.locator("#import-problems")).to_contain_text("line 2")
    expect(page.locator("#import-refusal")).to_contain_text("run the command again")
    shot(page, "import-refused-800")

    done = ImportJob.objects.get(status="succeeded", format="judge_run")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/imports/{done.pk}/")
    summary = page.get_by_label("Summary")
    expect(summary).to_contain_text("2 scores")
    shot(page, "import-judge-run-1440")
    summary.get_by_role("link", name="offline").click()
    page.wait_for_url(f"{live_server.url}/runs/{run.pk}/")
