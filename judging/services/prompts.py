"""Prompt templates: versioned, never edited in place once created.

A "change" to a template is a new version of the same name, so that every run keeps
pointing at exactly the text it was made with (runs store the template id).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Max, Q

from flaskapp import workspaces
from flaskapp.errors import DomainError, Problem
from flaskapp.limits import model_text_problems
from flaskapp.untrusted import text_problem
from judging import kinds, prompts
from judging.models import PromptTemplate

NAME_MAX = PromptTemplate._meta.get_field("name").max_length


def prompt_template_create(
    *,
    user: User,
    name: str,
    kind: str,
    system_text: str,
    user_text: str,
    workspace=None,
) -> PromptTemplate:
    """Create the next version of template `name` (version 1 for a new name).

    The texts of a template of a judge task kind's `prompt_kind` must suit that
    kind (`TaskKind.template_problems`: a pointwise template keeps every
    placeholder the renderer fills). Raises `DomainError` naming the field. The
    template belongs to `workspace` (None: the user's first workspace as researcher).
    """
    if workspace is None:
        workspace = workspaces.workspace_for_create(user)
    else:
        workspaces.require_workspace_role(user, workspace.pk, workspaces.RESEARCHER)
    name = (name or "").strip()
    problems: list[Problem] = []
    if not name:
        problems.append(Problem("is empty", field="name"))
    elif len(name) > NAME_MAX:
        problems.append(Problem(f"is longer than {NAME_MAX} characters", field="name"))
    for field_name, value in (
        ("name", name),
        ("system_text", system_text or ""),
        ("user_text", user_text or ""),
    ):
        if problem := text_problem(value):
            problems.append(Problem(problem, field=field_name))
    problems += model_text_problems(
        PromptTemplate,
        {"system_text": system_text or "", "user_text": user_text or ""},
    )
    if kind not in PromptTemplate.Kind.values:
        problems.append(Problem(f"unknown kind {kind!r}", field="kind"))
    if not (user_text or "").strip():
        problems.append(Problem("is empty", field="user_text"))
    else:
        problems += [
            Problem(p, field="user_text")
            for task in kinds.all_kinds()
            if task.prompt_kind == kind
            for p in task.template_problems(user_text)
        ]
    if problems:
        raise DomainError("the prompt template was not saved", problems)
    with transaction.atomic():
        # Versions count on among the templates the workspace sees (its own and
        # the built-ins), never another workspace's: a name's versions reveal nothing.
        last = (
            PromptTemplate.objects.select_for_update()
            .filter(name=name)
            .filter(Q(workspace=workspace) | Q(workspace__isnull=True))
            .aggregate(v=Max("version"))["v"]
        )
        try:
            with transaction.atomic():
                return PromptTemplate.objects.create(
                    workspace=workspace,
                    name=name,
                    version=(last or 0) + 1,
                    kind=kind,
                    system_text=system_text or "",
                    user_text=user_text,
                )
        except IntegrityError as exc:  # another save took this version meanwhile
            raise DomainError(
                "the prompt template was not saved",
                [
                    Problem(
                        f"version {(last or 0) + 1} of {name!r} was saved by another "
                        "request meanwhile; save again",
                        field="name",
                    )
                ],
            ) from exc


def prompt_get_builtin(
    kind: str, layout: str = PromptTemplate.Layout.FLASK
) -> PromptTemplate:
    """The built-in prompt template of `kind` and `layout` (created on first use from
    judging.prompts).

    FLASK layout: "builtin-<kind>". FLAMe layout: "builtin-<kind>-flame", whose texts
    are not used: the engine renders the task in the INSTRUCTIONS / CONTEXT /
    EVALUATION layout itself (`judging.prompts.render_pointwise_flame`, ...). A judge
    config selects the layout by pointing at such a template.
    """
    if layout not in PromptTemplate.Layout.values:
        raise ValueError(f"unknown layout {layout!r}")
    texts = {
        PromptTemplate.Kind.POINTWISE: (
            prompts.BUILTIN_POINTWISE_SYSTEM,
            prompts.BUILTIN_POINTWISE_USER,
        ),
    }
    system_text, user_text = texts.get(kind, ("", "{instruction}"))
    name = f"builtin-{kind}"
    if layout == PromptTemplate.Layout.FLAME:
        name += "-flame"
        system_text = ""
        user_text = (
            "(FLAMe text-to-text layout: INSTRUCTIONS / CONTEXT / EVALUATION, "
            "rendered by judging.prompts)"
        )
    template, _ = PromptTemplate.objects.get_or_create(
        workspace=None,  # shared by every workspace, read-only (issue 35)
        name=name,
        version=1,
        defaults={
            "kind": kind,
            "layout": layout,
            "system_text": system_text,
            "user_text": user_text,
            "is_builtin": True,
        },
    )
    return template
