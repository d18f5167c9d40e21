"""`experiment_join_new_run`: a new run joins its experiment, or is deleted with the
reason (the one workflow of the run form and `manage.py judge --experiment`, whose
own tests are in tests/analysis/test_experiments.py)."""

from __future__ import annotations

import pytest

from flaskapp.errors import DomainError
from judging.models import JudgeRun
from judging.services.experiments import experiment_create, experiment_join_new_run
from judging.services.runs import judge_run_create
from tests.analysis.agreement_data import make_agreement_setup
from tests.factories import UserFactory
from tests.judging.data import make_config

pytestmark = pytest.mark.django_db

MODELS = ("alpha", "beta")


@pytest.fixture
def researcher():
    return UserFactory(username="join-researcher", role="researcher")


@pytest.fixture
def experiment(researcher):
    scores = {(i, m, "factuality"): 1 + (i + k) % 5 for i in range(4) for k, m in
              enumerate(MODELS)}  # fmt: skip
    s = make_agreement_setup(
        researcher, human={k: [v] for k, v in scores.items()}, judges=[scores],
        n_instructions=4, models=MODELS, n_raters=1, name="join",
    )  # fmt: skip
    return experiment_create(
        user=researcher, dataset=s.dataset, name="e", run_ids=[s.runs[0].pk]
    )


def _new_run(researcher, experiment, **kwargs) -> JudgeRun:
    return judge_run_create(
        config=make_config(researcher),
        dataset=experiment.dataset,
        user=researcher,
        **kwargs,
    )


def test_a_run_over_the_same_items_joins_and_stays(researcher, experiment):
    run = _new_run(researcher, experiment)
    got = experiment_join_new_run(user=researcher, experiment_id=experiment.pk, run=run)
    assert got == experiment
    assert set(experiment.runs.all()) == {experiment.baseline, run}
    assert JudgeRun.objects.filter(pk=run.pk).exists()


def test_a_run_over_other_items_is_deleted_with_the_reason(researcher, experiment):
    run = _new_run(researcher, experiment, instruction_limit=2)
    with pytest.raises(DomainError, match="not added") as refused:
        experiment_join_new_run(user=researcher, experiment_id=experiment.pk, run=run)
    assert "same items" in str(refused.value.problems[0].message)
    assert not JudgeRun.objects.filter(pk=run.pk).exists()
    assert experiment.runs.count() == 1


def test_an_unknown_experiment_deletes_the_run(researcher, experiment):
    run = _new_run(researcher, experiment)
    with pytest.raises(DomainError) as refused:
        experiment_join_new_run(user=researcher, experiment_id=10**8, run=run)
    problem = refused.value.problems[0]
    assert problem.field == "experiment" and "no experiment" in problem.message
    assert not JudgeRun.objects.filter(pk=run.pk).exists()
