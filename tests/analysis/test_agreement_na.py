"""Judge N/A is counted, never dropped silently: an item whose samples are all N/A is
one judge N/A item; an N/A sample beside numeric samples is left out of the item's
median and counted as a judge N/A sample (result counts, API, table)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from analysis.selectors.agreement import agreement_compute
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(researcher):
    human, judge = {}, {}
    for i in range(6):
        for key in ("readability", "factuality"):
            human[(i, "alpha", key)] = [1 + i % 5, 1 + (i + 1) % 5, "-"]
            judge[(i, "alpha", key)] = [1 + i % 5, 2]
    judge[(0, "alpha", "readability")] = [4, None]  # one N/A sample, scored item
    judge[(1, "alpha", "readability")] = [None, 3]  # another
    judge[(2, "alpha", "factuality")] = [None, None]  # an N/A item
    judge[(3, "alpha", "factuality")] = [5, None]
    return make_agreement_setup(
        researcher,
        human=human,
        judges=[judge],
        n_instructions=6,
        models=("alpha",),
        name="na-set",
    )


def counts(result, key, run) -> dict[str, int]:
    return result.row(key).judge(run.pk).counts


def test_na_samples_beside_numeric_ones_are_counted(setup):
    run = setup.runs[0]
    res = agreement_compute(dataset=setup.dataset, n_boot=0)
    read = counts(res, "skill:readability", run)
    fact = counts(res, "skill:factuality", run)
    assert (read["judge_na"], read["judge_na_samples"]) == (0, 2)
    assert (fact["judge_na"], fact["judge_na_samples"]) == (1, 1)
    overall = counts(res, "overall", run)
    assert (overall["judge_na"], overall["judge_na_samples"]) == (1, 3)
    # the item with [4, N/A] still counts, with 4 as its score
    assert read["scored_by_both"] == 6 and fact["scored_by_both"] == 5


def test_the_api_and_the_table_show_the_count(
    setup, researcher, api_client_for, client_for
):
    run = setup.runs[0]
    url = reverse("analysis_api:agreement", args=[setup.dataset.pk]) + "?n_boot=0"
    body = api_client_for(researcher).get(url).json()
    overall = next(r for r in body["rows"] if r["key"] == "overall")
    assert overall["judges"][str(run.pk)]["counts"]["judge_na_samples"] == 3
    html = (
        client_for(researcher)
        .get(
            reverse("analysis:agreement", args=[setup.dataset.pk]),
            {"n_boot": 0, "full": 1},
        )
        .content.decode()
    )
    row = html.split('data-row="skill:factuality"', 1)[1].split("</tr>", 1)[0]
    assert "N/A: judge 1 item + 1 sample," in row
    row = html.split('data-row="skill:readability"', 1)[1].split("</tr>", 1)[0]
    assert "N/A: judge 0 items + 2 samples," in row
