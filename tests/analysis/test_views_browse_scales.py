"""The instruction page and the dataset responses page on rubrics other than FLASK's:
values on each criterion's scale (labels for a yes/no question), disagreement on
that scale, the raters' and judges' critiques side by side, and filters bounded by
the criterion's scale."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from analysis.selectors.browse import human_majority, judge_item_score, threshold
from annotation.models import Instruction, Response
from annotation.scales import scale_of
from tests.analysis.rubric_data import (
    HELPSTEER,
    rubric_0_4,
    rubric_1_10,
    rubric_yes_no,
    scored_dataset,
)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def page_url(instruction_id: int) -> str:
    return reverse("analysis:instruction-detail", args=[instruction_id])


def responses_url(dataset, query: str = "") -> str:
    url = reverse("analysis:dataset-responses", args=[dataset.pk])
    return f"{url}?{query}" if query else url


def block(html: str, response_id: int, marker: str, end: str) -> str:
    card = html.split(f'data-response="{response_id}"', 1)[1].split("</article>", 1)[0]
    return card.split(marker, 1)[1].split(end, 1)[0]


def first(dataset, j: int = 0) -> tuple[Instruction, Response]:
    instruction = dataset.instructions.order_by("position")[j]
    return instruction, instruction.responses.get()


@pytest.fixture
def raters(db):
    return [UserFactory(username=f"person-{k}", role="rater") for k in range(3)]


@pytest.fixture
def yes_no(raters):
    """Three raters: yes, yes, no (majority yes) on both responses; the judge says no
    on response 0 (disagrees) and yes on response 1."""
    return scored_dataset(
        rubric_yes_no(),
        raters=raters,
        human_values={"consistent": [0, 0, 1]},
        judge_values={"consistent": [1, 0]},
    )


def test_rules_on_other_scales():
    yes_no = scale_of(rubric_yes_no().skills.get())
    assert judge_item_score([1, 0, 1], yes_no) == 1  # the most frequent label
    assert judge_item_score([0, 1], yes_no) == 0  # a tie: the earliest sample's
    assert judge_item_score([None, None], yes_no) is None
    assert judge_item_score([3, 4]) == 4  # ordinal: median rounded half up
    assert human_majority([0, 1]) is None and human_majority([1, 1, 0]) == 1
    assert threshold(scale_of(rubric_1_10().skills.get())) == 4.5
    assert threshold(scale_of(rubric_0_4().skills.first())) == 2


def test_instruction_page_shows_labels_and_critiques_side_by_side(
    client_for, researcher, yes_no
):
    dataset, *_ = yes_no
    instruction, response = first(dataset)
    client = client_for(researcher)
    html = client.get(page_url(instruction.pk)).content.decode()

    skill = block(html, response.pk, 'data-skill="consistent"', 'class="critiques"')
    assert "labels yes / no" in skill
    assert "majority <b" in skill and ">Yes</b>" in skill
    assert "Yes 2, No 1" in skill
    assert skill.count('<span class="score-badge">Yes</span>') == 2
    assert skill.count('<span class="score-badge">No</span>') == 2  # rater C, judge
    assert "disagreement-flag" in skill  # judge no vs the raters' majority yes
    critiques = block(html, response.pk, 'class="critiques"', "</article>")
    human, judge = critiques.split('class="side judge-side judge-critiques"')
    for k, letter in enumerate("ABC"):
        assert f"Rater {letter}" in human
        assert f"Rater {k} on response 0: the second claim is wrong." in human
    assert "Judge critique of response 0: it omits the date." in judge
    assert "Judge critique" not in human and "Rater 0 on" not in judge
    assert "person-0" not in html  # researchers see letters, not names
    instruction, other = first(dataset, 1)
    html = client.get(page_url(instruction.pk)).content.decode()
    assert "disagreement-flag" not in block(
        html, other.pk, 'data-skill="consistent"', 'class="critiques"'
    )


def test_instruction_page_queries_do_not_grow(client_for, researcher, raters):
    counts = []
    for n in (1, 3):
        dataset, *_ = scored_dataset(
            rubric_0_4() if n == 1 else rubric_1_10(),
            raters=raters[:n],
            human_values={k: [2] * n for k in [*HELPSTEER, "overall"]},
            judge_values={k: [2, 2] for k in [*HELPSTEER, "overall"]},
        )
        instruction, _ = first(dataset)
        with CaptureQueriesContext(connection) as ctx:
            assert client_for(researcher).get(page_url(instruction.pk)).status_code == (
                200
            )
        counts.append(len(ctx))
    assert counts[0] == counts[1]


def test_ordinal_scales_show_their_range_and_disagree_on_it(
    client_for, researcher, raters
):
    dataset, *_ = scored_dataset(
        rubric_0_4(),
        raters=raters[:2],
        human_values={k: [4, 4] if k == "helpfulness" else [0, 1] for k in HELPSTEER},
        judge_values={k: [2, 0] if k == "helpfulness" else [0, 0] for k in HELPSTEER},
    )
    instruction, response = first(dataset)
    html = client_for(researcher).get(page_url(instruction.pk)).content.decode()
    helpful = block(html, response.pk, 'data-skill="helpfulness"', 'data-skill="')
    assert "scale 0-4" in helpful
    assert "disagreement-flag" in helpful  # |2 - 4| >= half of 0-4
    correct = block(html, response.pk, 'data-skill="correctness"', 'data-skill="')
    assert '<span class="score-badge">0</span>' in correct  # 0 is a score, not N/A
    assert "disagreement-flag" not in correct

    ten, *_ = scored_dataset(
        rubric_1_10(),
        raters=raters[:2],
        human_values={"overall": [10, 1]},  # mean 5.5
        judge_values={"overall": [9, 10]},
    )
    flags = []
    for j in range(2):
        instruction, response = first(ten, j)
        html = client_for(researcher).get(page_url(instruction.pk)).content.decode()
        part = block(html, response.pk, 'data-skill="overall"', 'class="critiques"')
        assert "scale 1-10" in part
        flags.append("disagreement-flag" in part)
    assert flags == [False, True]  # 3.5 < 4.5 <= 4.5


def test_responses_filter_ranges_use_the_skill_scale(client_for, researcher, raters):
    dataset, _, run, _ = scored_dataset(
        rubric_1_10(),
        raters=raters[:2],
        human_values={"overall": [10, 8]},
        judge_values={"overall": [9, 2]},
    )
    client = client_for(researcher)
    html = client.get(responses_url(dataset)).content.decode()
    assert "Overall (1-10)" in html
    assert 'name="human_min" min="1" max="10"' in html
    found = client.get(
        responses_url(dataset, f"skill=overall&run={run.pk}&judge_min=8&human_min=9")
    )
    assert found.status_code == 200
    rows = found.content.decode().split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    assert rows.count("<tr") == 1 and "9.00" in rows and ">9<" in rows
    far = client.get(responses_url(dataset, f"skill=overall&run={run.pk}&disagree=6"))
    assert far.content.decode().count('data-response="') == 1  # |2 - 9| >= 6
    bad = client.get(responses_url(dataset, "skill=overall&human_min=11"))
    assert bad.status_code == 400
    assert "<code>human_min</code>: must be a number from 1 to 10" in (
        bad.content.decode()
    )


def test_responses_filter_on_a_yes_no_question(client_for, researcher, yes_no):
    dataset, _, run, _ = yes_no
    client = client_for(researcher)
    differ = client.get(
        responses_url(dataset, f"skill=consistent&run={run.pk}&disagree=1")
    )
    assert differ.status_code == 200
    body = differ.content.decode()
    _, response = first(dataset)
    assert body.count('<tr data-response="') == 1
    assert f'<tr data-response="{response.pk}"' in body
    row = body.split(f'<tr data-response="{response.pk}"', 1)[1].split("</tr>", 1)[0]
    assert ">Yes<" in row and ">No<" in row  # the raters' majority, the judge's
    refused = client.get(responses_url(dataset, "skill=consistent&human_min=1"))
    assert refused.status_code == 400
    assert "answered with labels (yes / no)" in refused.content.decode()
    anywhere = client.get(responses_url(dataset, "human_min=1"))
    assert anywhere.status_code == 400
    assert "only labels" in anywhere.content.decode()
    hx = client.get(
        responses_url(dataset, f"run={run.pk}&disagree=1"), HTTP_HX_REQUEST="true"
    )
    assert hx.status_code == 200 and hx.content.decode().count("<tr data-response") == 1


def test_raters_are_refused(client_for, raters, yes_no):
    dataset, *_ = yes_no
    instruction, _ = first(dataset)
    assert client_for(raters[0]).get(page_url(instruction.pk)).status_code == 403
    assert client_for(raters[0]).get(responses_url(dataset)).status_code == 403
