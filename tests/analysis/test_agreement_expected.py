"""The agreement dashboard's option to use the judge's probability-weighted score:
the correlations move to the expected score (checked against numpy and scipy), QWK
and exact agreement stay on the integer, and the page says so."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats as sp

from analysis.selectors.agreement import AgreementError, agreement_compute
from annotation.models import HumanScore
from judging.models import JudgeScore
from tests.analysis.rubric_data import rubric_1_10, scored_dataset
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

# Per response: the two raters' scores, the judge's integer and its expected score.
HUMANS = [(2, 3), (4, 4), (5, 7), (8, 9), (6, 6), (9, 10), (3, 2), (7, 8)]
JUDGE = [3, 4, 6, 8, 6, 9, 3, 7]
EXPECTED = [4.4, 3.1, 6.3, 8.4, 5.2, 9.5, 2.4, 7.6]


@pytest.fixture
def setup():
    raters = [UserFactory(username=f"e{k}", role="rater") for k in range(2)]
    dataset, campaign, run, _ = scored_dataset(
        rubric_1_10(),
        raters=raters,
        human_values={"overall": [1, 1]},
        judge_values={"overall": JUDGE},
        n_responses=len(JUDGE),
    )
    for j, (a, b) in enumerate(HUMANS):
        for k, value in enumerate((a, b)):
            HumanScore.objects.filter(
                assignment__response__instruction__position=j,
                assignment__rater=raters[k],
                assignment__campaign=campaign,
            ).update(score=value)
        JudgeScore.objects.filter(run=run, response__instruction__position=j).update(
            expected_score=EXPECTED[j], expected_mass=0.9
        )
    return dataset, campaign, run


def cell(result, run):
    return result.row("skill:overall").judges[str(run.pk)].stats


def compute(setup, **kw):
    dataset, campaign, run = setup
    return agreement_compute(
        dataset=dataset,
        campaign_ids=[campaign.pk],
        run_ids=[run.pk],
        n_boot=200,
        use_cache=False,
        **kw,
    )


def test_correlations_use_the_expected_score_and_qwk_the_integer(setup):
    _, _, run = setup
    integer = cell(compute(setup), run)
    expected = cell(compute(setup, judge_score="expected"), run)
    mean = np.array([(a + b) / 2 for a, b in HUMANS])
    x = np.array(EXPECTED)
    assert expected["pearson"].value == pytest.approx(np.corrcoef(x, mean)[0, 1])
    assert expected["spearman"].value == pytest.approx(sp.spearmanr(x, mean)[0])
    assert expected["kendall"].value == pytest.approx(sp.kendalltau(x, mean)[0])
    assert expected["pearson"].value != pytest.approx(integer["pearson"].value)
    assert integer["pearson"].value == pytest.approx(
        np.corrcoef(np.array(JUDGE, float), mean)[0, 1]
    )
    assert expected["pearson"].n == len(JUDGE)
    low, high = expected["pearson"].ci
    assert low <= expected["pearson"].value <= high
    for key in ("qwk", "exact"):
        assert expected[key].value == integer[key].value


def test_items_without_an_expected_score_are_left_out_of_the_correlations(setup):
    _, _, run = setup
    JudgeScore.objects.filter(run=run, response__instruction__position=0).update(
        expected_score=None
    )
    stats = cell(compute(setup, judge_score="expected"), run)
    assert stats["pearson"].n == len(JUDGE) - 1
    mean = np.array([(a + b) / 2 for a, b in HUMANS])[1:]
    assert stats["pearson"].value == pytest.approx(
        np.corrcoef(np.array(EXPECTED[1:]), mean)[0, 1]
    )
    assert stats["qwk"].n == len(JUDGE)  # the integer figures keep every item


def test_an_unknown_judge_score_is_refused_naming_it(setup):
    with pytest.raises(AgreementError, match="judge_score"):
        compute(setup, judge_score="median")


def test_the_dashboard_option_changes_the_figures_and_says_so(setup, client_for):
    dataset, campaign, run = setup
    client = client_for(UserFactory(role="researcher"))
    url = reverse("analysis:agreement", args=[dataset.pk])
    query = f"?campaign={campaign.pk}&run={run.pk}&n_boot=0&full=1"
    plain = client.get(url + query)
    weighted = client.get(url + query + "&judge_score=expected")
    assert plain.status_code == weighted.status_code == 200
    plain_text, weighted_text = plain.content.decode(), weighted.content.decode()
    assert 'id="judge-score-note"' in weighted_text
    assert "QWK, exact agreement and the other statistics use the judge" in (
        weighted_text
    )
    assert 'id="judge-score-note"' not in plain_text
    mean = np.array([(a + b) / 2 for a, b in HUMANS])
    r_expected = np.corrcoef(np.array(EXPECTED), mean)[0, 1]  # 0.946
    r_integer = np.corrcoef(np.array(JUDGE, float), mean)[0, 1]  # 0.998
    shown = '<span class="stat-value">{:.2f}</span>'
    assert shown.format(r_expected) in weighted_text
    assert shown.format(r_expected) not in plain_text
    assert shown.format(r_integer) in plain_text
    bad = client.get(url + query + "&judge_score=nope")
    assert bad.status_code in (200, 400)
    assert "judge_score" in bad.content.decode()


def test_the_api_takes_the_option_and_refuses_an_unknown_one(setup, api_client_for):
    dataset, campaign, run = setup
    client = api_client_for(UserFactory(role="researcher"))
    url = f"/api/datasets/{dataset.pk}/agreement/"
    query = {"campaign": campaign.pk, "run": run.pk, "n_boot": 0}
    body = client.get(url, {**query, "judge_score": "expected"}).json()
    assert body["judge_score"]["kind"] == "expected"
    row = next(r for r in body["rows"] if r["key"] == "skill:overall")
    mean = np.array([(a + b) / 2 for a, b in HUMANS])
    assert row["judges"][str(run.pk)]["pearson"]["value"] == pytest.approx(
        np.corrcoef(np.array(EXPECTED), mean)[0, 1]
    )
    plain = client.get(url, query).json()
    assert "judge_score" not in plain
    bad = client.get(url, {**query, "judge_score": "mean"})
    assert bad.status_code == 400 and "judge_score" in bad.content.decode()
