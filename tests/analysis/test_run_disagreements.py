"""The page that reads a run's disagreements: both rationales side by side per item,
the tag and note forms (htmx and plain), the development split by default, tag
counts for the run and its prompt version, bad input, constant queries, and the
refusal of raters and anonymous users on every URL."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from judging.models import (
    CriterionNote,
    DisagreementTag,
    EvalSplit,
    EvalSplitMember,
)
from judging.services.tags import criterion_note_add, failure_tag_apply
from tests.judging.tags_data import workbench_setup

pytestmark = pytest.mark.django_db


@pytest.fixture
def wb(researcher):
    return workbench_setup(researcher, name="page-set")


def page_url(run):
    return reverse("analysis:run-disagreements", args=[run.pk])


def articles(html: str) -> dict[str, str]:
    """response id -> the HTML of its <article>."""
    return dict(
        re.findall(
            r'<article class="disagreement" data-response="(\d+)">(.*?)</article>',
            html,
            re.S,
        )
    )


def test_page_shows_judge_and_human_rationales_side_by_side(wb, client_for, researcher):
    run = wb.runs[0]
    answer = client_for(researcher).get(
        page_url(run), {"skill": "factuality", "campaign": wb.campaign.pk}
    )
    assert answer.status_code == 200
    html = answer.content.decode()
    found = articles(html)
    odd = {str(wb.responses[(i, m)].pk) for i in (1, 3) for m in ("alpha", "beta")}
    # Judge A says 5 on odd instructions where the raters say 2-3: those first.
    assert odd <= set(found)
    r = wb.responses[(1, "alpha")]
    block = found[str(r.pk)]
    side = block[block.index('class="side-by-side"') :]
    assert "judge A says 5 for alpha on q1 factuality" in side
    assert side.index("judge-rationale") < side.index("human-rationale")
    assert "human 0 on factuality" in side and "human 2 on factuality" in side
    assert f'id="item-tags-{r.pk}"' in block
    assert 'list="failure-tag-names"' in block
    assert 'id="tag-counts"' in html and 'id="criterion-notes"' in html
    assert str(wb.prompt) in html


def test_htmx_answers_the_fragment(wb, client_for, researcher):
    answer = client_for(researcher).get(
        page_url(wb.runs[0]), {"skill": "comprehension"}, headers={"HX-Request": "true"}
    )
    assert answer.status_code == 200
    html = answer.content.decode()
    assert html.lstrip().startswith('<section id="run-disagreements"')
    assert "<html" not in html
    assert "human 1 on comprehension" in html
    assert "HX-Request" in answer["Vary"]


def test_default_is_the_development_split(wb, client_for, researcher):
    split = EvalSplit.objects.create(dataset=wb.dataset, test_fraction=0.5)
    instructions = {r.instruction_id for r in wb.responses.values()}
    test_part = {wb.responses[(3, "alpha")].instruction_id}
    EvalSplitMember.objects.bulk_create(
        EvalSplitMember(
            split=split,
            instruction_id=i,
            part="test" if i in test_part else "dev",
        )
        for i in instructions
    )
    client = client_for(researcher)
    found = articles(
        client.get(page_url(wb.runs[0]), {"skill": "factuality"}).content.decode()
    )
    assert str(wb.responses[(1, "alpha")].pk) in found
    assert str(wb.responses[(3, "alpha")].pk) not in found  # the locked test part
    every = articles(
        client.get(
            page_url(wb.runs[0]), {"skill": "factuality", "split": "all"}
        ).content.decode()
    )
    assert str(wb.responses[(3, "alpha")].pk) in every
    locked = client.get(page_url(wb.runs[0]), {"skill": "factuality", "split": "test"})
    assert locked.status_code == 400
    assert "test split is locked" in locked.content.decode()


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"skill": "no-such"}, "`skill`"),
        ({"campaign": "x"}, "`campaign`"),
        ({"campaign": "999999"}, "campaign"),
        ({"split": "dev"}, "`split`"),  # no split made
    ],
)
def test_bad_choice_is_a_400_naming_the_parameter(
    wb, client_for, researcher, params, needle
):
    answer = client_for(researcher).get(page_url(wb.runs[0]), params)
    assert answer.status_code == 400
    assert needle in answer.content.decode()


def test_htmx_tag_form_adds_a_tag_and_refreshes_the_counts(wb, client_for, researcher):
    run, r = wb.runs[0], wb.responses[(1, "alpha")]
    client = client_for(researcher)
    url = reverse("analysis:run-disagreement-tag-add", args=[run.pk])
    body = {"response": r.pk, "skill": "factuality", "tag": " lenient on units "}
    answer = client.post(url, body, headers={"HX-Request": "true"})
    assert answer.status_code == 200
    html = answer.content.decode()
    assert html.lstrip().startswith(f'<div class="item-tags" id="item-tags-{r.pk}"')
    assert "lenient on units" in html
    assert 'id="tag-counts" class="card tag-counts" hx-swap-oob="true"' in html
    assert '<option value="lenient on units">' in html  # the datalist, refreshed
    assert DisagreementTag.objects.filter(run=run, response=r).count() == 1
    page = client.get(page_url(run), {"skill": "factuality"}).content.decode()
    assert "lenient on units" in articles(page)[str(r.pk)]

    remove = reverse("analysis:run-disagreement-tag-remove", args=[run.pk])
    body["tag"] = "lenient on units"
    answer = client.post(remove, body, headers={"HX-Request": "true"})
    assert answer.status_code == 200
    assert not DisagreementTag.objects.exists()


def test_plain_tag_form_redirects_back_to_the_page(wb, client_for, researcher):
    run, r = wb.runs[0], wb.responses[(1, "alpha")]
    url = reverse("analysis:run-disagreement-tag-add", args=[run.pk])
    answer = client_for(researcher).post(
        url,
        {
            "response": r.pk,
            "skill": "factuality",
            "tag": "vague",
            "campaign": wb.campaign.pk,
            "split": "all",
        },
    )
    assert answer.status_code == 302
    assert answer["Location"].startswith(page_url(run) + "?")
    assert "skill=factuality" in answer["Location"]
    assert f"campaign={wb.campaign.pk}" in answer["Location"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tag": ""}, "tag"),
        ({"tag": "x" * 101}, "tag"),
        ({"tag": "bad\x07bell"}, "tag"),
        ({"skill": "no-such"}, "skill"),
        ({"skill": "nul\x00"}, "skill"),
        ({"response": "0"}, "response"),
    ],
)
def test_bad_tag_is_refused_naming_the_field(wb, client_for, researcher, body, field):
    run, r = wb.runs[0], wb.responses[(1, "alpha")]
    url = reverse("analysis:run-disagreement-tag-add", args=[run.pk])
    data = {"response": r.pk, "skill": "factuality", "tag": "ok", **body}
    client = client_for(researcher)
    plain = client.post(url, data)
    assert plain.status_code == 400
    assert f"field `{field}`" in plain.content.decode()
    fragment = client.post(url, data, headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    assert 'role="alert"' in fragment.content.decode()
    assert not DisagreementTag.objects.exists()


def test_counts_for_the_run_and_its_prompt_version(wb, client_for, researcher):
    run_a, run_b, _ = wb.runs
    for run, key in ((run_a, (1, "alpha")), (run_a, (3, "beta")), (run_b, (1, "beta"))):
        failure_tag_apply(
            user=researcher,
            run=run,
            response=wb.responses[key],
            skill="factuality",
            tag_name="vague",
        )
    html = (
        client_for(researcher)
        .get(page_url(run_a), {"skill": "factuality"})
        .content.decode()
    )
    run_table = html[html.index('id="run-tag-counts"') :]
    prompt_table = html[html.index('id="prompt-tag-counts"') :]
    assert re.search(r'vague</th><td class="num">2<', run_table)
    assert re.search(r'vague</th><td class="num">3<', prompt_table)
    assert "(2 runs)" in html


def test_notes_form_adds_a_note_to_the_prompt_version(wb, client_for, researcher):
    run = wb.runs[1]  # its prompt version comes from its frozen settings
    url = reverse("analysis:run-criterion-note-add", args=[run.pk])
    client = client_for(researcher)
    for text in ("units matter", "so do ranges"):
        answer = client.post(
            url,
            {"skill_key": "factuality", "text": text},
            headers={"HX-Request": "true"},
        )
        assert answer.status_code == 200
    html = answer.content.decode()
    assert html.lstrip().startswith('<section id="criterion-notes"')
    assert html.index("units matter") < html.index("so do ranges")
    assert [n.prompt_id for n in CriterionNote.objects.all()] == [wb.prompt.pk] * 2
    page = client.get(page_url(wb.runs[0]), {"skill": "factuality"}).content.decode()
    assert "so do ranges" in page  # the same prompt version, another run
    bad = client.post(url, {"skill_key": "no-such", "text": "x"})
    assert bad.status_code == 400 and "field `skill_key`" in bad.content.decode()
    empty = client.post(url, {"skill_key": "factuality", "text": " "})
    assert empty.status_code == 400 and "field `text`" in empty.content.decode()
    assert CriterionNote.objects.count() == 2


def test_page_queries_do_not_grow_with_tags_and_notes(
    wb, client_for, researcher, django_assert_max_num_queries
):
    client = client_for(researcher)
    run = wb.runs[0]
    params = {"skill": "factuality", "campaign": wb.campaign.pk}
    client.get(page_url(run), params)  # warm the session and caches
    with django_assert_max_num_queries(30) as few:
        client.get(page_url(run), params)
    for key, r in wb.responses.items():
        failure_tag_apply(
            user=researcher,
            run=run,
            response=r,
            skill="factuality",
            tag_name=f"tag {key[0]}",
        )
        criterion_note_add(
            user=researcher, prompt=wb.prompt, skill_key="factuality", text=str(key)
        )
    with django_assert_max_num_queries(len(few.captured_queries)):
        answer = client.get(page_url(run), params)
    assert answer.content.decode().count('class="badge" title=') == len(wb.responses)


def _every_url(wb):
    run = wb.runs[0]
    body = {"response": wb.responses[(1, "alpha")].pk, "skill": "factuality"}
    return [
        ("get", page_url(run), {"skill": "factuality"}),
        (
            "post",
            reverse("analysis:run-disagreement-tag-add", args=[run.pk]),
            {**body, "tag": "x"},
        ),
        (
            "post",
            reverse("analysis:run-disagreement-tag-remove", args=[run.pk]),
            {**body, "tag": "x"},
        ),
        (
            "post",
            reverse("analysis:run-criterion-note-add", args=[run.pk]),
            {"skill_key": "factuality", "text": "x"},
        ),
    ]


@pytest.mark.parametrize("htmx", [False, True])
def test_raters_and_anonymous_are_refused_everywhere(wb, client_for, rater, htmx):
    headers = {"HX-Request": "true"} if htmx else {}
    for user, expected in ((rater, 403), (None, 302)):
        client = client_for(user)
        for method, url, data in _every_url(wb):
            answer = getattr(client, method)(url, data, headers=headers)
            assert answer.status_code == expected, (url, user)
            if expected == 302:
                assert "/login/" in answer["Location"]
    assert not DisagreementTag.objects.exists()
    assert not CriterionNote.objects.exists()


def test_run_detail_and_drill_down_link_to_the_page(wb, client_for, researcher):
    client = client_for(researcher)
    run = wb.runs[0]
    detail = client.get(reverse("judging:run-detail", args=[run.pk])).content.decode()
    assert page_url(run) in detail
    drill = client.get(
        reverse("analysis:agreement-skill", args=[wb.dataset.pk, "factuality"]),
        {"campaign": wb.campaign.pk, "run": run.pk, "judge": run.pk},
    )
    assert drill.status_code == 200
    assert f"{page_url(run)}?skill=factuality&amp;campaign={wb.campaign.pk}" in (
        drill.content.decode()
    )
