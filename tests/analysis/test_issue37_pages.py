"""Issue 37's defects of the analysis pages (view tests; each fails if its defect
comes back)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from judging.models import JudgeRun
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db


def _box(name: str, value: int) -> str:
    return f'name="{name}" value="{value}" checked'


def test_a_refused_agreement_choice_keeps_the_boxes_ticked(researcher, client_for):
    # defect 29: the 400 page showed the form with every box unchecked
    judge = {(i, "alpha", "readability"): 3 for i in range(4)}
    human = {(i, "alpha", "readability"): [3, 4] for i in range(4)}
    setup = make_agreement_setup(
        researcher, human=human, judges=[judge, judge], n_instructions=4, n_raters=2,
        name="keep-boxes",
    )  # fmt: skip
    url = reverse("analysis:agreement", args=[setup.dataset.pk])
    client = client_for(researcher)
    # nothing ticked (the defaults), a bad n_boot: the defaults stay ticked
    page = client.get(url, {"n_boot": "lots"})
    html = page.content.decode()
    assert page.status_code == 400 and "n_boot" in html
    assert _box("campaign", setup.campaign.pk) in html
    assert all(_box("run", r.pk) in html for r in setup.runs)
    # one run ticked and the other its reference run: the ticked one stays alone
    first, second = setup.runs
    page = client.get(url, {"run": first.pk, "reference": first.pk})
    html = page.content.decode()
    assert page.status_code == 400 and _box("run", first.pk) in html
    assert _box("run", second.pk) not in html
    assert _box("campaign", setup.campaign.pk) in html


def test_the_experiment_form_offers_only_scoring_runs_grouped_by_dataset(
    researcher, client_for
):
    # defect 9: every run of every dataset (pairwise ones too) was offered, and the
    # form then refused with "field `run_ids`: ..."
    judge = {(i, "alpha", "readability"): 3 for i in range(2)}
    human = {(i, "alpha", "readability"): [3, 4] for i in range(2)}
    first = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=2, n_raters=2,
        name="exp-first",
    )  # fmt: skip
    second = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=2, n_raters=2,
        name="exp-second",
    )  # fmt: skip
    pairwise = JudgeRun.objects.create(
        dataset=first.dataset,
        name="pairwise import",
        kind=JudgeRun.Kind.IMPORTED,
        status=JudgeRun.Status.COMPLETED,
    )
    html = (
        client_for(researcher).get(reverse("analysis:experiment-list")).content.decode()
    )
    box = html.split('id="experiment-runs"', 1)[1]
    for setup in (first, second):
        group = box.split(f'data-group="{setup.dataset.pk}"', 1)[1].split(
            "</fieldset>"
        )[0]
        assert setup.dataset.name in group
        assert f'value="{setup.runs[0].pk}"' in group
    assert f'value="{pairwise.pk}"' not in box
    assert 'data-group-filter="experiment-runs"' in html
