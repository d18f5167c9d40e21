"""Rater models on a categorical criterion (yes / no): Dawid-Skene, the classic model
for labels, fitted to the raters and a judge run; the same competences and latent
labels as crowd-kit on the same labels; a contrary rater last, a judge that copies
the truth first."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.selectors.competence import campaign_rater_models, latent_human_scores
from analysis.stats.competence import DS_ITER, DS_TOL, ds_competence
from annotation.models import HumanScore, Skill
from tests.analysis.classification_data import make_classification_setup

pytestmark = pytest.mark.django_db
N = 24


@pytest.fixture
def labelled(researcher):
    rng = np.random.default_rng(5)
    truth = {(i, "alpha"): ["yes", "no"][int(rng.integers(0, 2))] for i in range(N)}
    flip = {"yes": "no", "no": "yes"}
    human, judge = {}, {}
    for (i, m), t in truth.items():
        noisy = [t if rng.random() > 0.1 else flip[t] for _ in range(3)]
        human[(i, m, "consistent")] = [*noisy, flip[t]]  # the fourth: contrary
        human[(i, m, "safety")] = ["-", "-", "-", "-"]
        judge[(i, m, "consistent")] = t
    s = make_classification_setup(
        researcher, human=human, judges=[judge], n_instructions=N,
        models=("alpha",), n_raters=4, name="cat-models",
    )  # fmt: skip
    return s


def test_dawid_skene_on_labels_matches_crowd_kit(labelled):
    from crowdkit.aggregation import DawidSkene

    s = labelled
    report = campaign_rater_models(campaign=s.campaign, run_ids=[s.runs[0].pk])
    (crit,) = [c for c in report.criteria if c.key == "consistent"]
    assert crit.categorical and crit.n_tasks == N
    names = [a.name for a in crit.annotators]
    assert crit.annotators[0].kind == "judge"  # the truth ranks first
    assert names[-1] == s.raters[3].username  # the contrary rater last
    assert crit.judges[0].rank == 1 and crit.judges[0].of == 5

    skill = Skill.objects.get(rubric=s.dataset.rubric, key="consistent")
    rows = list(
        HumanScore.objects.filter(
            assignment__campaign=s.campaign, skill=skill
        ).values_list("assignment__response_id", "assignment__rater_id", "score")
    )
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    from judging.models import JudgeScore

    judge = list(
        JudgeScore.objects.filter(run=s.runs[0], skill=skill).values_list(
            "response_id", "score"
        )
    )
    frame = pd.concat(
        [
            frame,
            pd.DataFrame(
                [(r, -s.runs[0].pk, v) for r, v in judge],
                columns=["task", "worker", "label"],
            ),
        ],  # fmt: skip
        ignore_index=True,
    )
    model = DawidSkene(n_iter=DS_ITER, tol=DS_TOL).fit(frame)
    workers = np.array(sorted(frame["worker"].unique()))
    theirs = dict(
        zip(
            workers.tolist(),
            ds_competence(model.errors_, model.priors_, workers),
            strict=True,
        )  # fmt: skip
    )
    for a in crit.annotators:
        wid = -a.id if a.kind == "judge" else a.id
        assert a.competence == pytest.approx(theirs[wid], abs=1e-9), a.name
    # The humans' latent labels: crowd-kit's on the raters' labels alone.
    humans_only = frame[frame["worker"] > 0]
    latent = DawidSkene(n_iter=DS_ITER, tol=DS_TOL).fit_predict(humans_only)
    ours = latent_human_scores(campaign=s.campaign)
    for response_id, label in latent.items():
        assert ours[(response_id, skill.pk)] == int(label)


def test_a_synthetic_rater_is_marked(labelled):
    from django.contrib.auth.models import Group

    from flaskapp import roles

    s = labelled
    s.raters[1].groups.add(Group.objects.get_or_create(name=roles.SYNTHETIC)[0])
    report = campaign_rater_models(campaign=s.campaign, run_ids=[s.runs[0].pk])
    (crit,) = [c for c in report.criteria if c.key == "consistent"]
    marked = {a.name for a in crit.annotators if a.synthetic}
    assert marked == {s.raters[1].username}
