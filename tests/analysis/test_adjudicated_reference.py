"""The "human, adjudicated" reference of the agreement: where a reviewer settled a
dispute, the judges are compared with the settled value instead of the raters'
scores; elsewhere with the raters'. Checked against scipy / scikit-learn on arrays
built here; the raters' ceiling is the same either way; the cache follows each
adjudication; bad values are refused naming the parameter."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.stats as sps
from django.core.management import call_command
from sklearn.metrics import cohen_kappa_score

from analysis.selectors.agreement import AgreementError, agreement_compute
from annotation.services.adjudication import adjudication_set
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db
KEY = "readability"


@pytest.fixture
def setup(researcher):
    rng = np.random.default_rng(11)
    human, judge = {}, {}
    for i in range(10):
        for m in ("alpha", "beta"):
            truth = int(rng.integers(1, 6))
            scores = [int(np.clip(truth + rng.integers(-1, 2), 1, 5)) for _ in range(3)]
            if i % 3 == 0:
                scores = [1, 3, 5]  # a dispute the reviewer settles
            human[(i, m, KEY)] = scores
            judge[(i, m, KEY)] = truth
    s = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=10, name="adj-ref"
    )
    s.tables = (human, judge)
    return s


def settle(s, researcher):
    """Settle every [1, 3, 5] item at the judge's value + 0 (i % 2) or - 1."""
    human, judge = s.tables
    settled = {}
    for (i, m, key), scores in human.items():
        if scores == [1, 3, 5]:
            value = max(1, judge[(i, m, key)] - (i % 2))
            adjudication_set(
                campaign=s.campaign, response_id=s.responses[(i, m)].pk,
                criterion=key, score=value, note="settled", user=researcher,
            )  # fmt: skip
            settled[(i, m)] = value
    return settled


def arrays(s, settled):
    human, judge = s.tables
    mean, med, jv = [], [], []
    for (i, m, _), scores in sorted(human.items()):
        if (i, m) in settled:
            mean.append(settled[(i, m)])
            med.append(settled[(i, m)])
        else:
            mean.append(np.mean(scores))
            med.append(np.floor(np.median(scores) + 0.5))
        jv.append(judge[(i, m, KEY)])
    return np.array(mean), np.array(med), np.array(jv, float)


def skill_row(result):
    return result.row(f"skill:{KEY}")


def test_judges_meet_the_settled_values(setup, researcher):
    settled = settle(setup, researcher)
    assert len(settled) == 8
    rid = str(setup.runs[0].pk)
    raters = agreement_compute(dataset=setup.dataset, n_boot=50)
    adjudicated = agreement_compute(
        dataset=setup.dataset, n_boot=50, human_reference="adjudicated"
    )
    assert adjudicated.reference.humans == "adjudicated"
    assert "adjudicated" in adjudicated.reference.label
    for result, used in ((raters, {}), (adjudicated, settled)):
        mean, med, jv = arrays(setup, used)
        j = skill_row(result).judge(rid)
        assert j.stat("qwk").value == pytest.approx(
            cohen_kappa_score(jv.astype(int), med.astype(int), weights="quadratic")
        )
        assert j.stat("spearman").value == pytest.approx(sps.spearmanr(jv, mean)[0])
        assert j.stat("exact").value == pytest.approx(np.mean(jv == med))
        assert j.stat("mae").value == pytest.approx(np.mean(np.abs(jv - mean)))

    # The raters' own agreement (the ceiling) does not change with the reference;
    # the humans' model means do (they are the reference's).
    def ceiling(result):
        return replace(skill_row(result).human, models=None)

    assert ceiling(raters) == ceiling(adjudicated)
    assert skill_row(raters).human.models != skill_row(adjudicated).human.models


def test_the_cache_follows_each_adjudication(setup, researcher):
    first = agreement_compute(
        dataset=setup.dataset, n_boot=20, human_reference="adjudicated"
    )
    # Nothing settled yet: the same figures as the raters'.
    rid = str(setup.runs[0].pk)
    plain = agreement_compute(dataset=setup.dataset, n_boot=20)
    assert skill_row(first).judge(rid).stat("qwk") == skill_row(plain).judge(rid).stat(
        "qwk"
    )
    settle(setup, researcher)
    again = agreement_compute(
        dataset=setup.dataset, n_boot=20, human_reference="adjudicated"
    )
    assert skill_row(again).judge(rid).stat("qwk") != skill_row(first).judge(rid).stat(
        "qwk"
    )


def test_bad_reference_is_refused_everywhere(
    setup, researcher, api_client_for, client_for
):
    with pytest.raises(AgreementError, match="human_reference"):
        agreement_compute(dataset=setup.dataset, human_reference="trimmed")
    api = api_client_for(researcher)
    url = f"/api/datasets/{setup.dataset.pk}/agreement/"
    bad = api.get(url + "?human_reference=trimmed")
    assert bad.status_code == 400 and "human_reference" in str(bad.json())
    ok = api.get(url + "?human_reference=adjudicated&n_boot=10")
    assert ok.status_code == 200 and ok.json()["reference"]["humans"] == "adjudicated"
    page = client_for(researcher).get(
        f"/agreement/{setup.dataset.pk}/?human_reference=trimmed"
    )
    assert page.status_code == 400 and "human_reference" in page.content.decode()


def test_the_command_takes_adjudicated(setup, researcher):
    import io
    import json

    settle(setup, researcher)
    out = io.StringIO()
    call_command(
        "agreement", "--dataset", "adj-ref", "--human-reference", "adjudicated",
        "--boot", "10",
        "--format", "json", stdout=out,
    )  # fmt: skip
    assert json.loads(out.getvalue())["reference"]["humans"] == "adjudicated"


def test_the_latent_reference_is_the_dawid_skene_label(setup):
    """human_reference=latent: each item's reference is the raters' latent label of
    a Dawid-Skene fit (crowd-kit, on the same labels), a single score per item."""
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    from annotation.models import HumanScore

    rows = list(
        HumanScore.objects.filter(assignment__campaign=setup.campaign)
        .exclude(score__isnull=True)
        .values_list("assignment__response_id", "assignment__rater_id", "score")
    )
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    from analysis.stats.competence import DS_ITER, DS_TOL

    theirs = DawidSkene(n_iter=DS_ITER, tol=DS_TOL).fit_predict(frame)
    result = agreement_compute(
        dataset=setup.dataset, n_boot=20, human_reference="latent"
    )
    assert result.reference.humans == "latent"
    human, judge = setup.tables
    latent = {r.pk: int(theirs[r.pk]) for r in setup.responses.values()}
    med = np.array([latent[setup.responses[(i, m)].pk]
                    for (i, m, _), _s in sorted(human.items())], float)  # fmt: skip
    jv = np.array([judge[k] for k in sorted(human)], float)
    j = skill_row(result).judge(setup.runs[0].pk)
    assert j.stat("qwk").value == pytest.approx(
        cohen_kappa_score(jv.astype(int), med.astype(int), weights="quadratic")
    )
    assert j.stat("exact").value == pytest.approx(np.mean(jv == med))


@pytest.mark.parametrize("how", ["mean", "median"])
def test_one_score_per_item_references(setup, how):
    """mean / median: every statistic against one rounded score per item."""
    human, judge = setup.tables
    result = agreement_compute(dataset=setup.dataset, n_boot=20, human_reference=how)
    assert result.reference.humans == how
    pick = np.mean if how == "mean" else np.median
    ref = np.array([np.floor(pick(human[k]) + 0.5) for k in sorted(human)])
    jv = np.array([judge[k] for k in sorted(human)], float)
    j = skill_row(result).judge(setup.runs[0].pk)
    assert j.stat("qwk").value == pytest.approx(
        cohen_kappa_score(jv.astype(int), ref.astype(int), weights="quadratic")
    )
    assert j.stat("spearman").value == pytest.approx(sps.spearmanr(jv, ref)[0])
    assert j.stat("mae").value == pytest.approx(np.mean(np.abs(jv - ref)))
