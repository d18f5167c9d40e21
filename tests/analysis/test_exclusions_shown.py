"""An exclusion is shown wherever it is applied: the agreement dashboard (page and
API) names the raters left out, who decided, when and why, and stops doing so once
the exclusion is reversed; the figures change with it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from analysis.selectors.agreement import agreement_compute
from annotation.services.exclusions import rater_decision_end, rater_decision_start
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(researcher):
    human, judge = {}, {}
    for i in range(6):
        for m in ("alpha", "beta"):
            for key in ("readability", "factuality"):
                base = 1 + (i + (m == "beta")) % 5
                human[(i, m, key)] = [base, base, 6 - base]  # the third is contrary
                judge[(i, m, key)] = base
    return make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=6, name="excl-set"
    )


def test_the_dashboard_names_the_excluded_rater_until_reversed(
    setup, researcher, client_for, api_client_for
):
    contrary = setup.raters[2]
    url = reverse("analysis:agreement", args=[setup.dataset.pk])
    before = agreement_compute(dataset=setup.dataset, n_boot=20)
    assert before.exclusions == []
    rater_decision_start(
        campaign=setup.campaign, rater=contrary, kind="exclude",
        reason="scores the opposite way", user=researcher,
    )  # fmt: skip
    after = agreement_compute(dataset=setup.dataset, n_boot=20)
    assert [(e["rater"], e["by"], e["reason"]) for e in after.exclusions] == [
        (contrary.username, researcher.username, "scores the opposite way")
    ]
    # The figures follow: without the contrary rater the humans agree with the judge.
    row, old = after.row("skill:readability"), before.row("skill:readability")
    assert row.human != old.human
    html = client_for(researcher).get(url + "?n_boot=20").content.decode()
    assert "1 rater left out" in html and "scores the opposite way" in html
    assert contrary.username in html
    api = api_client_for(researcher).get(
        f"/api/datasets/{setup.dataset.pk}/agreement/?n_boot=20"
    )
    assert api.status_code == 200
    assert [e["rater_id"] for e in api.json()["exclusions"]] == [contrary.pk]
    # The drill-down of a skill and the pointwise probes apply it too, and say so.
    drill = client_for(researcher).get(
        reverse("analysis:agreement-skill", args=[setup.dataset.pk, "readability"])
        + f"?campaign={setup.campaign.pk}&run={setup.runs[0].pk}&n_boot=20"
    )
    assert (
        drill.status_code == 200 and "scores the opposite way" in drill.content.decode()
    )
    from analysis.selectors.metaeval import pointwise_probes

    probes = pointwise_probes(
        dataset=setup.dataset, campaign_ids=[setup.campaign.pk],
        run_id=setup.runs[0].pk, n_boot=20,
    )  # fmt: skip
    assert [e["rater"] for e in probes["exclusions"]] == [contrary.username]
    # The instruction page shows the excluded rater's scores, marked, and leaves
    # them out of the raters' mean.
    response = next(iter(setup.responses.values()))
    page = client_for(researcher).get(
        reverse("analysis:instruction-detail", args=[response.instruction_id])
    )
    assert page.status_code == 200
    assert page.content.decode().count(">excluded</span>") >= 1
    rater_decision_end(
        campaign=setup.campaign, rater=contrary, kind="exclude",
        reason="", user=researcher,
    )  # fmt: skip
    html = client_for(researcher).get(url + "?n_boot=20").content.decode()
    assert "left out" not in html
    assert agreement_compute(dataset=setup.dataset, n_boot=20).exclusions == []
