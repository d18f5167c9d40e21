"""Failure tags on a run's items and notes on a prompt version's criteria: the services
(reusable tags, idempotency, refusals that name the field and write nothing), the
selectors (counts per run and per prompt version, notes in order, constant queries)
and the API (happy paths, bad input, raters and anonymous refused)."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from flaskapp.errors import DomainError
from judging.models import (
    CriterionNote,
    DisagreementTag,
    FailureTag,
    PromptTemplate,
)
from judging.selectors import tags as selectors
from judging.services.tags import (
    criterion_note_add,
    failure_tag_apply,
    failure_tag_remove,
)
from tests.factories import ResponseFactory
from tests.judging.tags_data import SKILLS, workbench_setup

pytestmark = pytest.mark.django_db


@pytest.fixture
def wb(researcher):
    return workbench_setup(researcher)


def test_tagging_makes_a_reusable_tag_once(wb, researcher):
    run = wb.runs[0]
    r1, r2 = wb.responses[(0, "alpha")], wb.responses[(1, "beta")]
    first = failure_tag_apply(
        user=researcher,
        run=run,
        response=r1,
        skill="factuality",
        tag_name="  misses the unit ",
    )
    again = failure_tag_apply(
        user=researcher,
        run=run,
        response=r1,
        skill="factuality",
        tag_name="misses the unit",
    )
    other_item = failure_tag_apply(
        user=researcher,
        run=run,
        response=r2.pk,
        skill="factuality",
        tag_name="Misses the Unit",
    )
    assert first.pk == again.pk  # idempotent
    assert first.tag.name == "misses the unit"  # trimmed
    assert other_item.tag_id == first.tag_id  # reused, whatever the case
    assert FailureTag.objects.filter(dataset=wb.dataset).count() == 1
    assert DisagreementTag.objects.filter(run=run).count() == 2
    assert selectors.failure_tag_names(dataset=wb.dataset) == ["misses the unit"]


def test_tag_note_is_kept_and_replaced_by_a_new_note(wb, researcher):
    run, r = wb.runs[0], wb.responses[(0, "alpha")]
    args = dict(user=researcher, run=run, response=r, skill="factuality", tag_name="t")
    failure_tag_apply(**args, note="first reading")
    assert failure_tag_apply(**args).note == "first reading"
    assert failure_tag_apply(**args, note="second").note == "second"


def test_remove_takes_the_tag_off_and_drops_an_unused_tag(wb, researcher):
    run = wb.runs[0]
    r1, r2 = wb.responses[(0, "alpha")], wb.responses[(0, "beta")]
    for r in (r1, r2):
        failure_tag_apply(
            user=researcher, run=run, response=r, skill="factuality", tag_name="vague"
        )
    args = dict(user=researcher, run=run, skill="factuality", tag_name="vague")
    assert failure_tag_remove(**args, response=r1) is True
    assert failure_tag_remove(**args, response=r1) is False  # idempotent
    assert FailureTag.objects.filter(dataset=wb.dataset, name="vague").exists()
    assert failure_tag_remove(**args, response=r2) is True
    assert not FailureTag.objects.filter(dataset=wb.dataset).exists()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"tag_name": ""}, "tag"),
        ({"tag_name": "   "}, "tag"),
        ({"tag_name": "x" * 101}, "tag"),
        ({"tag_name": "two\nlines"}, "tag"),
        ({"tag_name": "tab\there"}, "tag"),
        ({"tag_name": "nul\x00"}, "tag"),
        ({"tag_name": "bell\x07"}, "tag"),
        ({"skill": "no-such-criterion"}, "skill"),
        ({"response": "foreign"}, "response"),
        ({"response": 10**9}, "response"),
        ({"note": "n" * 5001}, "note"),
    ],
)
def test_bad_tag_input_is_refused_naming_the_field(wb, researcher, changes, field):
    args = dict(
        user=researcher,
        run=wb.runs[0],
        response=wb.responses[(0, "alpha")],
        skill="factuality",
        tag_name="fine",
    )
    args.update(changes)
    if args["response"] == "foreign":
        args["response"] = ResponseFactory()  # another dataset's response
    with pytest.raises(DomainError) as exc:
        failure_tag_apply(**args)
    assert [p.field for p in exc.value.problems] == [field]
    assert not FailureTag.objects.exists()
    assert not DisagreementTag.objects.exists()


def test_a_100_character_name_is_accepted(wb, researcher):
    row = failure_tag_apply(
        user=researcher,
        run=wb.runs[0],
        response=wb.responses[(0, "alpha")],
        skill="factuality",
        tag_name="x" * 100,
    )
    assert len(row.tag.name) == 100


def test_raters_may_not_tag_or_note(wb, rater):
    with pytest.raises(PermissionDenied):
        failure_tag_apply(
            user=rater,
            run=wb.runs[0],
            response=wb.responses[(0, "alpha")],
            skill="factuality",
            tag_name="x",
        )
    with pytest.raises(PermissionDenied):
        criterion_note_add(
            user=rater, prompt=wb.prompt, skill_key="factuality", text="x"
        )
    assert not DisagreementTag.objects.exists()
    assert not CriterionNote.objects.exists()


def test_counts_per_run_and_per_prompt_version(wb, researcher):
    run_a, run_b, run_c = wb.runs
    r = wb.responses

    def tag(run, key, skill, name):
        failure_tag_apply(
            user=researcher, run=run, response=r[key], skill=skill, tag_name=name
        )

    tag(run_a, (0, "alpha"), "factuality", "vague")
    tag(run_a, (1, "alpha"), "factuality", "vague")
    tag(run_a, (1, "alpha"), "comprehension", "lenient")
    tag(run_b, (2, "beta"), "factuality", "vague")
    tag(run_c, (3, "beta"), "factuality", "vague")  # another prompt version
    assert selectors.failure_tag_counts_of_run(run=run_a) == [
        {"tag": "vague", "items": 2, "by_skill": {"factuality": 2}},
        {"tag": "lenient", "items": 1, "by_skill": {"comprehension": 1}},
    ]
    per_prompt = selectors.failure_tag_counts_of_prompt(prompt=wb.prompt)
    assert per_prompt["runs"] == 2  # run A by its config, run B by its snapshot
    assert per_prompt["tags"] == [
        {"tag": "vague", "items": 3, "by_skill": {"factuality": 3}},
        {"tag": "lenient", "items": 1, "by_skill": {"comprehension": 1}},
    ]
    assert selectors.failure_tag_counts_of_prompt(prompt=wb.other_prompt)["tags"] == [
        {"tag": "vague", "items": 1, "by_skill": {"factuality": 1}}
    ]
    assert selectors.run_prompt_id(run_b) == wb.prompt.pk


def test_notes_are_kept_with_the_prompt_version_in_order(wb, researcher):
    for text in ("first", "second", "third"):
        criterion_note_add(
            user=researcher, prompt=wb.prompt, skill_key="factuality", text=text
        )
    criterion_note_add(
        user=researcher, prompt=wb.prompt, skill_key="comprehension", text="other"
    )
    criterion_note_add(
        user=researcher, prompt=wb.other_prompt, skill_key="factuality", text="v2"
    )
    notes = selectors.criterion_note_list(prompt=wb.prompt, skill_key="factuality")
    assert [n.text for n in notes] == ["first", "second", "third"]
    assert [n.text for n in selectors.criterion_note_list(prompt=wb.prompt)] == [
        "first",
        "second",
        "third",
        "other",
    ]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"text": ""}, "text"),
        ({"text": "  \n "}, "text"),
        ({"text": "t" * 5001}, "text"),
        ({"text": "nul\x00"}, "text"),
        ({"skill_key": ""}, "skill_key"),
        ({"skill_key": "no-such-criterion"}, "skill_key"),
    ],
)
def test_bad_note_input_is_refused_naming_the_field(wb, researcher, changes, field):
    args = dict(user=researcher, prompt=wb.prompt, skill_key="factuality", text="ok")
    args.update(changes)
    with pytest.raises(DomainError) as exc:
        criterion_note_add(**args)
    assert [p.field for p in exc.value.problems] == [field]
    assert not CriterionNote.objects.exists()


def test_a_prompt_without_runs_takes_the_criteria_of_the_given_dataset(wb, researcher):
    unused = PromptTemplate.objects.create(name="unused", version=1, user_text="z")
    with pytest.raises(DomainError):
        criterion_note_add(
            user=researcher, prompt=unused, skill_key="factuality", text="x"
        )
    note = criterion_note_add(
        user=researcher,
        prompt=unused,
        skill_key="factuality",
        text="x",
        dataset=wb.dataset,
    )
    assert note.prompt_id == unused.pk


def test_selectors_take_a_constant_number_of_queries(
    wb, researcher, django_assert_max_num_queries
):
    run = wb.runs[0]
    for key in wb.responses:
        for skill in SKILLS:
            failure_tag_apply(
                user=researcher,
                run=run,
                response=wb.responses[key],
                skill=skill,
                tag_name=f"tag {key[0]}",
            )
        criterion_note_add(
            user=researcher, prompt=wb.prompt, skill_key="factuality", text=str(key)
        )
    with django_assert_max_num_queries(5):
        by_item = selectors.disagreement_tags_by_item(run=run)
        selectors.failure_tag_counts_of_run(run=run)
        selectors.failure_tag_counts_of_prompt(prompt=wb.prompt)
        notes = [
            n.created_by.username
            for n in selectors.criterion_note_list(prompt=wb.prompt)
        ]
        names = [t.tag.name for rows in by_item.values() for t in rows]
    assert len(names) == len(wb.responses) * len(SKILLS)
    assert len(notes) == len(wb.responses)


# --- API ------------------------------------------------------------------------


def tags_url(run):
    return reverse("judging_api:run-failure-tags", args=[run.pk])


def notes_url(prompt):
    return reverse("judging_api:prompt-criterion-notes", args=[prompt.pk])


def test_api_tags_a_run_lists_and_removes(wb, researcher, api_client_for):
    api = api_client_for(researcher)
    run, r = wb.runs[0], wb.responses[(0, "alpha")]
    body = {"response": r.pk, "skill": "factuality", "tag": "vague", "note": "why"}
    created = api.post(tags_url(run), body, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["tag"] == "vague"
    assert created.json()["skill"] == "factuality"
    listed = api.get(tags_url(run)).json()
    assert [t["tag"] for t in listed["tags"]] == ["vague"]
    assert listed["prompt_id"] == wb.prompt.pk
    assert listed["counts"]["run"][0]["items"] == 1
    assert listed["counts"]["prompt"]["runs"] == 2
    removed = api.delete(tags_url(run), body, format="json")
    assert removed.status_code == 200 and removed.json() == {"removed": True}
    assert api.get(tags_url(run)).json()["tags"] == []


def test_api_refuses_bad_tag_naming_the_field(wb, researcher, api_client_for):
    api = api_client_for(researcher)
    run = wb.runs[0]
    foreign = ResponseFactory()
    for body, field in [
        (
            {
                "response": wb.responses[(0, "alpha")].pk,
                "skill": "factuality",
                "tag": "",
            },
            "tag",
        ),
        ({"response": foreign.pk, "skill": "factuality", "tag": "x"}, "response"),
        (
            {"response": wb.responses[(0, "alpha")].pk, "skill": "nope", "tag": "x"},
            "skill",
        ),
        ({"skill": "factuality", "tag": "x"}, "response"),
    ]:
        answer = api.post(tags_url(run), body, format="json")
        assert answer.status_code == 400, body
        assert [p["field"] for p in answer.json()["problems"]] == [field]
    assert not DisagreementTag.objects.exists()


def test_api_notes_of_a_prompt_version(wb, researcher, api_client_for):
    api = api_client_for(researcher)
    for text in ("one", "two"):
        answer = api.post(
            notes_url(wb.prompt),
            {"skill_key": "factuality", "text": text},
            format="json",
        )
        assert answer.status_code == 201, answer.content
    bad = api.post(
        notes_url(wb.prompt), {"skill_key": "nope", "text": "x"}, format="json"
    )
    assert bad.status_code == 400
    assert [p["field"] for p in bad.json()["problems"]] == ["skill_key"]
    assert [n["text"] for n in api.get(notes_url(wb.prompt)).json()] == ["one", "two"]
    assert api.get(notes_url(wb.other_prompt)).json() == []


@pytest.mark.parametrize("who", ["rater", "anonymous"])
def test_api_refuses_raters_and_anonymous(wb, rater, api_client_for, who):
    api = api_client_for(rater if who == "rater" else None)
    expected = 403 if who == "rater" else 401
    run = wb.runs[0]
    body = {
        "response": wb.responses[(0, "alpha")].pk,
        "skill": "factuality",
        "tag": "x",
    }
    assert api.get(tags_url(run)).status_code == expected
    assert api.post(tags_url(run), body, format="json").status_code == expected
    assert api.delete(tags_url(run), body, format="json").status_code == expected
    assert api.get(notes_url(wb.prompt)).status_code == expected
    note = {"skill_key": "factuality", "text": "x"}
    assert api.post(notes_url(wb.prompt), note, format="json").status_code == expected
    assert not DisagreementTag.objects.exists()
    assert not CriterionNote.objects.exists()
