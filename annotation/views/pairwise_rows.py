"""What the pairwise pages share: the questions of the comparison form (overall, then
one per skill), the pair as the rater sees it (A and B in the assignment's recorded
order), the parsing of a posted answer, and a stored vote turned back into the
presented terms the rater saw. Used by the compare page (views/pairwise.py) and the
amend page (views/loop.py, with `views.pairwise.PairwisePage`)."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import QueryDict

from annotation.items.pairwise import pairwise_skills, unmap_shown_label
from annotation.models import Assignment, Campaign, HumanPreference, Skill
from annotation.selectors import pairwise as pairwise_selectors
from flaskapp.errors import Problem

LABEL_CHOICES = [("A", "A"), ("tie", "Tie"), ("B", "B")]


@dataclass
class LabelRow:
    """One question of the comparison form: overall, or one skill."""

    key: str  # "overall" or the skill key
    name: str  # the form field: "label" or "skill-<key>"
    title: str
    criteria: str = ""
    value: str = ""
    errors: list[str] | None = None


def label_rows(
    *,
    skills: list[Skill],
    values: dict[str, str] | None,
    problems: list[Problem] | None,
) -> tuple[list[LabelRow], list[str]]:
    """The form's rows with their values (form field -> "A"/"B"/"tie") and each
    problem next to the question it names; problems naming no question come back
    as the second item."""
    values = values or {}
    by_field: dict[str, list[str]] = {}
    general: list[str] = []
    for p in problems or []:
        if p.field == "label":
            by_field.setdefault("label", []).append(p.message)
        elif p.field and p.field.startswith("skill_labels."):
            by_field.setdefault("skill-" + p.field.split(".", 1)[1], []).append(
                p.message
            )
        else:
            general.append(str(p))
    rows = [
        LabelRow(
            key="overall",
            name="label",
            title="Overall, which response is better?",
            value=values.get("label", ""),
            errors=by_field.get("label"),
        )
    ]
    for skill in skills:
        name = f"skill-{skill.key}"
        rows.append(
            LabelRow(
                key=skill.key,
                name=name,
                title=skill.name,
                criteria=skill.criteria,
                value=values.get(name, ""),
                errors=by_field.get(name),
            )
        )
    return rows, general


def pair_context(
    *,
    assignment: Assignment,
    values: dict[str, str] | None = None,
    rationale: str = "",
    problems: list[Problem] | None = None,
) -> dict:
    """What `annotation/partials/pair_texts.html` and `pair_questions.html` show for
    one of the rater's pairwise assignments (loaded by
    `pairwise_assignment_get_for_rater`)."""
    campaign = assignment.campaign
    response_a, response_b = pairwise_selectors.shown_responses(assignment)
    instruction = assignment.pair.instruction
    rows, general_errors = label_rows(
        skills=pairwise_skills(campaign=campaign),
        values=values,
        problems=problems,
    )
    return {
        "instruction": instruction,
        "reference": instruction.reference_answer if campaign.show_reference else "",
        "text_a": response_a.text,
        "text_b": response_b.text,
        # Blind by default: model names enter the page only when allowed.
        "model_a": response_a.model_name if campaign.show_model_names else "",
        "model_b": response_b.model_name if campaign.show_model_names else "",
        "rows": rows,
        "general_errors": general_errors,
        "rationale": rationale,
        "label_choices": LABEL_CHOICES,
    }


def parse_pair_answer(
    post: QueryDict, *, campaign: Campaign
) -> tuple[str, dict[str, str], str, dict[str, str]]:
    """A posted comparison form -> (label, skill labels, rationale) as the services
    take them (presented terms; validation is theirs), and the posted values by
    form field, to show the form again after an error."""
    skills = pairwise_skills(campaign=campaign)
    label = post.get("label", "")
    skill_labels = {
        s.key: post[f"skill-{s.key}"] for s in skills if post.get(f"skill-{s.key}")
    }
    rationale = post.get("rationale", "")
    values = {"label": label} | {f"skill-{k}": v for k, v in skill_labels.items()}
    return label, skill_labels, rationale, values


def shown_answer(preference: HumanPreference) -> tuple[str, dict[str, str]]:
    """A stored vote in the terms its rater saw: (overall label, skill -> label),
    each "A", "B" or "tie"."""
    order = preference.shown_order
    return (
        unmap_shown_label(preference.label, order),
        {
            key: unmap_shown_label(value, order)
            for key, value in preference.skill_labels.items()
        },
    )
