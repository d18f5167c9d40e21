"""An imported run holds results without calls: its progress counts what it holds
(the run list and the run page), instead of "0 / 0"."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.urls import reverse

from annotation.services.preference_imports import preferences_import
from judging.models import JudgeRun, PairwiseVerdict
from judging.selectors.runs import judge_run_counts, judge_run_progress
from judging.services.verdicts import imported_verdicts

pytestmark = pytest.mark.django_db


def page_text(response) -> str:
    body = response.content.decode()
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body))).strip()


@pytest.fixture
def imported_run(db):
    """3 pairs with a judge's verdict in both orders: 6 verdicts, no calls."""
    rows = [
        {
            "prompt": f"Question {i}?",
            "response_1": f"Short answer {i}.",
            "response_2": f"A much longer answer to question {i}.",
            "label": "2",
            "verdict": "B",
            "verdict_swapped": "A",
        }
        for i in range(3)
    ]
    report = preferences_import(
        dataset_name="pref-import-set",
        file="generated-prefs.jsonl",
        data="\n".join(json.dumps(r) for r in rows).encode(),
        fmt="jsonl",
        judge="length heuristic",
        verdict_writer=imported_verdicts,
    )
    run = JudgeRun.objects.get(pk=report.run_id)
    assert run.kind == JudgeRun.Kind.IMPORTED and not run.calls.exists()
    assert PairwiseVerdict.objects.filter(run=run).count() == 6
    return run


def test_an_imported_runs_progress_counts_its_verdicts(imported_run):
    counts = judge_run_counts(run_ids=[imported_run.pk])[imported_run.pk]
    assert (counts.finished, counts.total, counts.percent) == (6, 6, 100)
    progress = judge_run_progress(run=imported_run)
    assert (progress.counts.succeeded, progress.counts.total) == (6, 6)


def test_run_list_and_run_page_show_what_the_imported_run_holds(
    client_for, researcher, imported_run
):
    client = client_for(researcher)
    listed = page_text(client.get(reverse("judging:run-list")))
    assert "6 / 6" in listed and "0 / 0" not in listed
    detail = page_text(
        client.get(reverse("judging:run-detail", args=[imported_run.pk]))
    )
    assert "6 / 6 done" in detail


def test_a_pairwise_run_holding_verdicts_without_calls_counts_them_everywhere(
    client_for, researcher, imported_run
):
    """The run list and the run page apply one rule: a pairwise run (not only an
    imported one) whose verdicts came without calls shows them as done on both."""
    JudgeRun.objects.filter(pk=imported_run.pk).update(kind=JudgeRun.Kind.PAIRWISE)
    run = JudgeRun.objects.get(pk=imported_run.pk)
    listed = judge_run_counts(run_ids=[run.pk])[run.pk]
    shown = judge_run_progress(run=run).counts
    assert (listed.finished, listed.total) == (shown.finished, shown.total) == (6, 6)
    client = client_for(researcher)
    assert "6 / 6" in page_text(client.get(reverse("judging:run-list")))
    detail = page_text(client.get(reverse("judging:run-detail", args=[run.pk])))
    assert "6 / 6 done" in detail and "0 / 0" not in detail
