"""A slice that selects no scored item answers with a row saying "no items", with
zero counts, not a row without counts and a misleading reason."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from analysis.selectors.agreement import agreement_compute
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(researcher):
    """Only difficulty-1 responses are scored; difficulty 2 selects no item."""
    return make_agreement_setup(
        researcher,
        human={(0, "alpha", "factuality"): [3, 4, "-"]},
        judges=[{(0, "alpha", "factuality"): 4}],
        n_instructions=2,
        models=("alpha", "beta"),
        name="empty-set",
        difficulty=[1, 2],
    )


def test_an_empty_slice_gives_a_no_items_row_with_zero_counts(setup):
    res = agreement_compute(
        dataset=setup.dataset, n_boot=10, slice_dim="difficulty", slice_value="2"
    )
    (row,) = res.rows
    assert row.key == "overall" and row.note == "no items"
    judge = row.judge(setup.runs[0].pk)
    assert judge.items == 0 and judge.scored_by_both == 0
    assert judge.counts["judge_na_samples"] == 0
    for stat in ("qwk", "spearman", "exact"):
        assert judge.stat(stat).value is None
        assert judge.stat(stat).reason == "no items"
    assert judge.flag.reason == "no items"
    assert row.human.n_items == 0
    assert row.human.stat("alpha_ordinal").reason == "no items"


def test_rows_with_items_carry_no_note(setup):
    res = agreement_compute(dataset=setup.dataset, n_boot=10)
    assert all(r.note == "" for r in res.rows)


def test_the_page_and_the_command_say_no_items(setup, researcher, client_for):
    html = (
        client_for(researcher)
        .get(
            reverse("analysis:agreement", args=[setup.dataset.pk]),
            {"slice": "difficulty:2", "n_boot": 0, "full": 1},
        )
        .content.decode()
    )
    row = html.split('data-row="overall"', 1)[1].split("</tr>", 1)[0]
    assert "No items" in row and "one shared category" not in row
    out = io.StringIO()
    call_command(
        "agreement", "--dataset", "empty-set", "--slice", "difficulty=2",
        "--boot", "0", stdout=out,
    )  # fmt: skip
    assert "no items" in out.getvalue()
