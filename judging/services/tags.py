"""Reading a run's disagreements: failure tags on its items, notes on its criteria.

A researcher reads the items where a judge run disagrees most with the humans and
tags each (response, criterion) with a failure mode. Tags are a dataset's reusable
vocabulary (`FailureTag`): the first use of a name makes it, later uses (in any
case) reuse it, and a tag no item carries any more is dropped, so a typo does not
stay in the list. What the researcher learnt about a criterion is a `CriterionNote`
kept with the prompt version the run used (`judging.selectors.tags.run_prompt_id`).

Researchers and admins only (`roles.require_researcher`). Bad input is a
`DomainError` whose problem names the field; nothing is written then.
"""

from __future__ import annotations

import unicodedata

from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import Response, Skill
from flaskapp import limits, workspaces
from flaskapp.errors import DomainError, Problem
from flaskapp.untrusted import text_problem
from judging.models import (
    CriterionNote,
    DisagreementTag,
    FailureTag,
    JudgeRun,
    JudgeScore,
    PromptTemplate,
)
from judging.selectors.tags import prompt_criterion_keys

MAX_TAG_NAME = 100  # FailureTag.name
MAX_NOTE = limits.NOTE  # DisagreementTag.note, CriterionNote.text


def _refuse(message: str, field: str, why: str) -> DomainError:
    return DomainError(message, [Problem(why, field=field)])


def _text(value, *, field: str, message: str, max_length: int, required: bool) -> str:
    """`value` trimmed, or a DomainError naming `field`: not text, empty when
    `required`, longer than `max_length`, or unstorable (`text_problem`)."""
    if not isinstance(value, str):
        raise _refuse(message, field, "must be text")
    value = value.strip()
    if required and not value:
        raise _refuse(message, field, "must not be empty")
    if len(value) > max_length:
        raise _refuse(
            message, field, f"must be at most {max_length} characters, not {len(value)}"
        )
    problem = text_problem(value)
    if problem:
        raise _refuse(message, field, problem)
    return value


def _tag_name(value, message: str) -> str:
    """A tag name: trimmed, 1-100 characters, one line without control characters
    (a name is shown in lists and option values, where a tab or a newline would not
    read as the same name)."""
    name = _text(
        value, field="tag", message=message, max_length=MAX_TAG_NAME, required=True
    )
    for ch in name:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            raise _refuse(
                message,
                "tag",
                f"must not contain control characters (found U+{ord(ch):04X})",
            )
    return name


def _response_of_run(run: JudgeRun, response, message: str) -> Response:
    response_id = getattr(response, "pk", response)
    found = (
        Response.objects.filter(
            pk=response_id, instruction__dataset_id=run.dataset_id
        ).first()
        if isinstance(response_id, int)
        else None
    )
    if found is None:
        raise _refuse(
            message, "response", f"response {response_id} is not in the run's dataset"
        )
    return found


def _skill_of_run(run: JudgeRun, skill, message: str) -> Skill:
    """The criterion `skill` (a Skill or its key) as the run knows it: the dataset's
    rubric's criterion of that key, else one of that key the run scored (a run on an
    older rubric version). Criteria are matched by key, as agreement matches them."""
    key = skill.key if isinstance(skill, Skill) else skill
    if not isinstance(key, str) or not key:
        raise _refuse(message, "skill", "choose a criterion")
    if text_problem(key):
        raise _refuse(message, "skill", text_problem(key))
    found = Skill.objects.filter(rubric_id=run.dataset.rubric_id, key=key).first()
    if found is None:
        scored = (
            JudgeScore.objects.filter(run=run, skill__key=key)
            .values_list("skill_id", flat=True)
            .first()
        )
        found = Skill.objects.filter(pk=scored).first() if scored else None
    if found is None:
        raise _refuse(
            message, "skill", f"{key[:64]!r} is not a criterion of the run's rubric"
        )
    return found


@transaction.atomic
def failure_tag_apply(
    *,
    user: User,
    run: JudgeRun,
    response: Response | int,
    skill: Skill | str,
    tag_name: str,
    note: str = "",
) -> DisagreementTag:
    """Tag one item (response, criterion) of `run` with the failure mode `tag_name`.

    Preconditions: `user` is a researcher or admin (PermissionDenied otherwise);
    the response is in the run's dataset and `skill` (a Skill or its key) is a
    criterion of the run (`_skill_of_run`); the name, trimmed, is 1-100 characters
    without control characters; `note` at most 5000 characters. A DomainError
    names the bad field (`response`, `skill`, `tag`, `note`) and nothing is written.

    Side effects: creates the dataset's `FailureTag` when no tag of that name
    (compared without case) exists, then the `DisagreementTag`.
    Idempotent: tagging the same item with the same tag again returns the stored
    row; a non-empty `note` replaces its note, an empty one keeps it.
    """
    workspaces.require_object_role(user, run, workspaces.RESEARCHER)
    message = "the tag was not added"
    response = _response_of_run(run, response, message)
    skill = _skill_of_run(run, skill, message)
    name = _tag_name(tag_name, message)
    note = _text(
        note, field="note", message=message, max_length=MAX_NOTE, required=False
    )
    tag = FailureTag.objects.filter(
        dataset_id=run.dataset_id, name__iexact=name
    ).first()
    if tag is None:
        tag, _ = FailureTag.objects.get_or_create(dataset_id=run.dataset_id, name=name)
    row, created = DisagreementTag.objects.get_or_create(
        run=run,
        response=response,
        skill=skill,
        tag=tag,
        defaults={"note": note, "created_by": user},
    )
    if not created and note and row.note != note:
        row.note = note
        row.save(update_fields=["note"])
    return row


@transaction.atomic
def failure_tag_remove(
    *,
    user: User,
    run: JudgeRun,
    response: Response | int,
    skill: Skill | str,
    tag_name: str,
) -> bool:
    """Take the tag `tag_name` off one item (response, criterion) of `run`.

    Preconditions as `failure_tag_apply` (role; response, skill and name valid, a
    DomainError naming the field otherwise). Side effects: deletes the
    `DisagreementTag`, and the dataset's `FailureTag` when no item of any run
    carries it any more. Idempotent: True when a tag was removed, False when the
    item did not carry it (nothing changes).
    """
    workspaces.require_object_role(user, run, workspaces.RESEARCHER)
    message = "the tag was not removed"
    response = _response_of_run(run, response, message)
    skill = _skill_of_run(run, skill, message)
    name = _tag_name(tag_name, message)
    tag = FailureTag.objects.filter(
        dataset_id=run.dataset_id, name__iexact=name
    ).first()
    if tag is None:
        return False
    deleted, _ = DisagreementTag.objects.filter(
        run=run, response=response, skill=skill, tag=tag
    ).delete()
    if deleted and not DisagreementTag.objects.filter(tag=tag).exists():
        tag.delete()
    return bool(deleted)


def criterion_note_add(
    *,
    user: User,
    prompt: PromptTemplate,
    skill_key: str,
    text: str,
    dataset=None,
) -> CriterionNote:
    """Keep a note on criterion `skill_key` with the prompt version `prompt`.

    Preconditions: `user` is a researcher or admin (PermissionDenied otherwise);
    `skill_key` is a criterion of the rubric of a dataset some run of this prompt
    version judged, or of `dataset`'s rubric (the page's dataset, for a prompt
    version no run has used yet); `text`, trimmed, is 1-5000 characters. A
    DomainError names the bad field (`skill_key`, `text`) and nothing is written.
    Side effects: one `CriterionNote` row. Not idempotent: each call adds a note
    (the notes are a trail, in the order written).
    """
    workspaces.require_object_role(user, prompt, workspaces.RESEARCHER)
    # The note belongs to the dataset's workspace, else the prompt's, else (a
    # built-in prompt) the user's first workspace as researcher: notes on a shared
    # prompt stay each workspace's own.
    if dataset is not None:
        workspaces.require_object_role(user, dataset, workspaces.RESEARCHER)
        workspace_id = dataset.workspace_id
    elif prompt.workspace_id is not None:
        workspace_id = prompt.workspace_id
    else:
        workspace_id = workspaces.workspace_for_create(user).pk
    message = "the note was not added"
    if not isinstance(skill_key, str) or not skill_key.strip():
        raise _refuse(message, "skill_key", "choose a criterion")
    skill_key = skill_key.strip()
    known = prompt_criterion_keys(
        prompt=prompt, dataset=dataset, workspace_id=workspace_id
    )
    if skill_key not in known:
        raise _refuse(
            message,
            "skill_key",
            f"{skill_key[:64]!r} is not a criterion of this prompt version's rubrics",
        )
    text = _text(
        text, field="text", message=message, max_length=MAX_NOTE, required=True
    )
    return CriterionNote.objects.create(
        workspace_id=workspace_id,
        prompt=prompt,
        skill_key=skill_key,
        text=text,
        created_by=user,
    )
