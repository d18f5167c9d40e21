"""Issue 37, defect 3: the run page's "Labels given" panel is part of what each
progress poll brings (out of band), so the counts are the run's own once it ends,
not the zeros of the page as first loaded."""

from __future__ import annotations

import re

import pytest

from judging.models import JudgeRun, JudgeScore
from judging.services.runs import judge_run_create, judge_run_start
from tests.judging.rubric_data import YES_NO, dataset_on
from tests.judging.test_any_rubric_runs import (  # noqa: F401 (fixture)
    eager_tasks,
    make_config,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.usefixtures("eager_tasks")
def test_the_last_poll_of_a_run_brings_its_label_counts(fake_server, client):
    config, user = make_config(fake_server(latency_ms=1), output_mode="json_schema")
    run = judge_run_create(
        config=config, dataset=dataset_on(YES_NO, instructions=3), user=user
    )
    client.force_login(user)
    # The page as a researcher opens it before the run starts: no label yet.
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "· 0 answers" in page

    judge_run_start(run=run, user=user)  # eager: drives inline until done
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED

    poll = client.get(f"/runs/{run.pk}/", HTTP_HX_REQUEST="true")
    assert poll.status_code == 286  # the run ended: the polling stops here
    body = poll.content.decode()
    section = re.search(
        r'<section[^>]*id="label-counts"[^>]*>(.*?)</section>', body, re.S
    )
    assert section, "the poll's answer carries the labels given"
    assert 'hx-swap-oob="true"' in section.group(0)
    answers = JudgeScore.objects.filter(run=run).count()
    assert answers == 6
    assert f"· {answers} answers" in section.group(1)
    yes = JudgeScore.objects.filter(run=run, score=0).count()
    cells = re.findall(r'<td class="num">(\d+)</td>', section.group(1))
    assert cells == [str(yes), str(answers - yes)]
