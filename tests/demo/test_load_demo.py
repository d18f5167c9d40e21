"""`manage.py load_demo` (what `make run` runs): users, dataset, campaign, baseline run."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from annotation.models import Campaign, Dataset, HumanScore, Instruction, Response
from judging.models import JudgeRun, JudgeScore

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def eager_tasks(settings):
    from flaskapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.REDIS_URL = ""
    yield
    app.conf.task_always_eager = before


def test_load_demo_creates_everything_once(eager_tasks, capsys):
    call_command("load_demo")
    call_command("load_demo")  # every `make run` repeats it: nothing doubles
    out = capsys.readouterr().out
    assert "rater1" in out and "flask-rater1" in out  # the logins are printed
    for username, group in [
        ("admin", "admin"),
        ("researcher", "researcher"),
        ("rater1", "rater"),
        ("rater2", "rater"),
    ]:
        user = User.objects.get(username=username)
        assert user.groups.filter(name=group).exists()
    assert User.objects.get(username="admin").is_superuser
    dataset = Dataset.objects.get(name="demo")
    assert Instruction.objects.filter(dataset=dataset).count() == 24
    assert Response.objects.filter(instruction__dataset=dataset).count() == 72
    pairwise = Campaign.objects.get(name="Demo pairwise campaign")
    assert pairwise.kind == Campaign.Kind.PAIRWISE and pairwise.items.count() == 72
    campaign = Campaign.objects.get(name="Demo campaign")
    assert campaign.overlap == 2 and campaign.items.count() == 72
    assert campaign.status == Campaign.Status.ACTIVE
    # the generated example ratings: every response rated by both demo raters, once
    example = Campaign.objects.get(name__startswith="Demo: example ratings")
    assert example.status == Campaign.Status.CLOSED
    submitted = example.assignments.filter(status="submitted")
    assert submitted.count() == 144
    assert (
        HumanScore.objects.filter(assignment__campaign=example, score__isnull=False)
        .values("assignment__response_id", "skill_id")
        .distinct()
        .count()
        > 100
    )
    assert set(campaign.raters.values_list("username", flat=True)) == {
        "rater1",
        "rater2",
    }
    # Generated ratings belong to synthetic accounts, never to the real demo raters
    # (bug 9), and every export says they are generated.
    from flaskapp import roles

    assert set(submitted.values_list("rater__username", flat=True)) == {
        "synthetic-rater-1",
        "synthetic-rater-2",
    }
    for username in ("synthetic-rater-1", "synthetic-rater-2"):
        bot = User.objects.get(username=username)
        assert roles.is_synthetic(bot) and not bot.has_usable_password()
    assert not roles.is_synthetic(User.objects.get(username="rater1"))
    assert not HumanScore.objects.filter(
        assignment__rater__username__in=["rater1", "rater2"]
    ).exists()
    from analysis.exports.scores import score_rows
    from analysis.exports.training import TrainingOptions, training_examples

    humans = [r for r in score_rows(dataset=dataset) if r["source_type"] == "human"]
    assert humans and all(r["synthetic"] for r in humans)
    examples = list(
        training_examples(
            dataset=dataset, options=TrainingOptions(kinds=("pointwise",))
        )
    )
    assert examples and all(e["source"]["synthetic"] for e in examples)
    # the generated preference set and the heuristic judge, imported once
    from analysis.selectors.metaeval import metaeval_compute
    from annotation.models import HumanPreference, PreferencePair

    assert PreferencePair.objects.filter(dataset=dataset).count() == 72
    assert HumanPreference.objects.filter(pair__dataset=dataset).count() == 144
    heuristic = JudgeRun.objects.get(kind=JudgeRun.Kind.IMPORTED)
    assert heuristic.verdicts.count() == 144
    report = metaeval_compute(dataset=dataset, n_boot=10)
    length = report["runs"][0]["report"]["probes"]["length"]
    assert length["value"]["n"] > 0  # the longer answer always wins: a length bias
    run = JudgeRun.objects.exclude(pk=heuristic.pk).get()
    assert run.status == JudgeRun.Status.COMPLETED  # the baseline needs no network
    assert JudgeScore.objects.filter(run=run).count() > 0
    # the agreement dashboard has something to compare offline
    from analysis.selectors.agreement import agreement_compute

    result = agreement_compute(
        dataset=dataset, campaign_ids=[example.pk], run_ids=[run.pk], n_boot=10
    )
    overall = result.rows[-1].judge(run.pk)
    assert overall.scored_by_both > 100


def test_load_demo_moves_example_ratings_of_an_older_version_to_synthetic_accounts(
    eager_tasks,
):
    """A database made before the synthetic accounts had the generated ratings under
    rater1 and rater2: the next `make run` credits them to the synthetic accounts."""
    from annotation.models import Assignment

    call_command("load_demo")
    example = Campaign.objects.get(name__startswith="Demo: example ratings")
    for old, new in (("rater1", "synthetic-rater-1"), ("rater2", "synthetic-rater-2")):
        Assignment.objects.filter(campaign=example, rater__username=new).update(
            rater=User.objects.get(username=old)
        )
    assert example.assignments.filter(rater__username="rater1").exists()

    call_command("load_demo")
    assert not example.assignments.filter(
        rater__username__in=["rater1", "rater2"]
    ).exists()
    assert example.assignments.filter(rater__username="synthetic-rater-1").count() == 72
    assert set(example.raters.values_list("username", flat=True)) == {
        "synthetic-rater-1",
        "synthetic-rater-2",
    }
