"""`manage.py load_demo` (what `make run` runs): users, dataset, campaign, baseline run."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from annotation.models import Campaign, Dataset, Instruction, Response
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
    campaign = Campaign.objects.get()
    assert campaign.overlap == 2 and campaign.items.count() == 72
    assert set(campaign.raters.values_list("username", flat=True)) == {
        "rater1",
        "rater2",
    }
    run = JudgeRun.objects.get()
    assert run.status == JudgeRun.Status.COMPLETED  # the baseline needs no network
    assert JudgeScore.objects.filter(run=run).count() > 0
