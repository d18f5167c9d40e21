"""Item kinds: what a campaign's item is, one module per kind, one `REGISTRY`.

A campaign of kind ``pointwise`` serves responses to score (`items.pointwise`); one
of kind ``pairwise`` serves pairs of responses to compare (`items.pairwise`). The
rater loop is the same for both (next, submit, skip, history, amend: the serving
rules in `services.serving`, the loop in `services.rating`); an `ItemKind` holds
only what differs:

| hook | what it says |
|---|---|
| `key`, `noun`, `verb`, ... | the Assignment field naming the item; the words of messages and reasons |
| `extra`, `reserved` | a new assignment's own fields (a pair's shown order); what to load once served |
| `lock_own` | the rater's own assignment of this kind, locked, with what submit needs |
| `clean` | a submitted answer checked (`DomainError` naming each field) |
| `store`, `stored_equal` | the checked answer written; whether a resubmit changes it |
| `amend_refusal`, `amend` | whether a submitted answer may change now; the change written |
| `history` | the rater's own submitted and skipped items, newest first |
| `holds`, `uses_rubric` | whether an assignment is of the kind; whether an answer freezes the rubric |
| `sql_*`, `extra_sql`, `clean_read` | how the raw-SQL fast path (`services.serving_sql`) serves the kind and stores its answers |

Adding a kind: a module here with its subclass, an entry in `REGISTRY` and in
`Campaign.Kind` (a migration), its tests, and for its pages a `LoopPage` in
`annotation/views/` with its partials (`templates/annotation/partials/`): the pages
know templates, the kinds do not. Generic code looks the kind up (`item_kind`)
instead of testing a campaign's kind.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from django.contrib.auth.models import User
from django.db.models import F, QuerySet
from django.http import Http404

from annotation import membership
from annotation.models import Assignment, Campaign, CampaignItem


class ItemKind:
    """The base of the item kinds: the hooks of the rater loop (see the module)."""

    campaign_kind: ClassVar[str]  # the `Campaign.Kind` value
    key: ClassVar[str]  # the Assignment field naming the item, e.g. "response_id"
    noun: ClassVar[str]  # "response" / "pair" (messages and reasons)
    verb: ClassVar[str]  # "rated" / "compared"
    answer: ClassVar[str] = "scores"  # what a rater submits (messages)
    lost: ClassVar[str] = "these scores were not counted"  # a refused late submit
    skip_submitted: ClassVar[str] = "; amend it instead"  # skipping a submitted one
    # Gold items and qualifications (`services.gold`, `services.qualification`).
    serves_gold: ClassVar[bool] = False
    # The raw-SQL path (`services.serving_sql`): whether serve (and submit, with
    # `sql_submit`) take it; the condition of this kind's items and assignments (their
    # partial unique indexes); `extra`'s fields as SQL over the picked item ``pick``.
    # What the form shows comes with the statement when the kind has `sql_form`.
    sql_fast_path: ClassVar[bool] = False
    sql_submit: ClassVar[bool] = False
    sql_where: ClassVar[str]
    extra_sql: ClassVar[dict[str, str]] = {}

    def extra(self, campaign: Campaign, item: CampaignItem, rater: User) -> dict:
        """Extra fields of a new assignment of `item`."""
        return {}

    def sql_form(self, *, skills: dict[str, str], skill_mode: str) -> tuple[str, str]:
        """What the serving statement (`services.serving_sql`) also returns so that
        the form needs no further query: ``(columns, joins)`` over ``got`` (the
        served assignment) and ``c`` (its campaign, joined already). `skills`: the
        SQL expressions that list the criteria as JSON, per skill mode and per
        source (``"source:chosen"``, ...). ``("", "")``: the page loads its rows."""
        return "", ""

    def sql_form_load(self, assignment: Assignment, values, skills_of) -> list | None:
        """Attach the rows of `sql_form`'s `values` to `assignment` (nothing is read)
        and return the criteria to ask (`skills_of(json)` decodes a skills list);
        None when the kind has no `sql_form`."""
        return None

    def reserved(self, assignment: Assignment) -> None:
        """Called with a newly reserved assignment (e.g. to load what the page
        shows)."""

    def lock_own(self, assignment_id: int, rater: User) -> Assignment:
        """`rater`'s own assignment of this kind, locked (``FOR UPDATE``); `Http404`
        for any other (another rater's, another kind's: reported exactly like a
        missing one), `PermissionDenied` for a rater taken out of the campaign.

        Loads only the campaign row and annotates what submit needs from the others:
        `rubric_id`, `rubric_frozen_at` and `instruction_id` (read by
        `selectors.rating.assignment_skills`)."""
        assignment = (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("campaign")
            .annotate(
                rubric_id=F("campaign__dataset__rubric_id"),
                rubric_frozen_at=F("campaign__dataset__rubric__frozen_at"),
                instruction_id=F("response__instruction_id"),
            )
            .filter(pk=assignment_id)
            .first()
        )
        if (
            assignment is None
            or assignment.rater_id != rater.pk
            or not self.holds(assignment)
        ):
            raise Http404("No such assignment.")
        membership.require_campaign_rater(rater, assignment.campaign_id)
        return assignment

    def clean(self, *, assignment: Assignment, answer: dict[str, Any]) -> Any:
        """The checked answer, or `DomainError` naming each field (nothing
        written)."""
        raise NotImplementedError

    def store(
        self, *, assignment: Assignment, valid: Any, rater: User, now: datetime
    ) -> None:
        """Write a checked answer of a submit (the slot is already taken)."""
        raise NotImplementedError

    def stored_equal(self, *, assignment: Assignment, valid: Any) -> bool:
        """Whether a checked answer is the one the submitted assignment stores."""
        raise NotImplementedError

    def conflict(self, assignment: Assignment):
        """The `ConflictError` of a resubmit with another answer."""
        raise NotImplementedError

    def amend_refusal(self, *, assignment: Assignment) -> str:
        """Why the answer of `assignment` cannot be amended now, or "" when it
        can: the one rule for the amend service and the pages offering it."""
        raise NotImplementedError

    def amend(
        self, *, assignment: Assignment, valid: Any, rater: User, now: datetime
    ) -> None:
        """Write a checked answer over the submitted one (history kept)."""
        raise NotImplementedError

    def history(self, *, user: User, campaign: Campaign) -> QuerySet[Assignment]:
        """`user`'s own submitted and skipped items in `campaign`, newest first."""
        raise NotImplementedError

    def holds(self, assignment: Assignment) -> bool:
        """Whether `assignment` is one of this kind's."""
        raise NotImplementedError

    def uses_rubric(self, valid: Any) -> bool:
        """Whether a checked answer uses the rubric's criteria (which freezes it)."""
        return True

    # The raw-SQL submit (`sql_submit`, `services.serving_sql.submit_write`).

    def clean_read(self, *, skills: list, answer: dict[str, Any]) -> Any:
        """`clean` with the criteria already read, for a campaign asking no
        critique."""
        raise NotImplementedError

    def sql_answer_insert(self) -> str:
        """The INSERT of a checked answer, over ``%(assignment)s``, ``%(stamp)s``
        and `sql_answer_params`."""
        raise NotImplementedError

    def sql_answer_params(self, *, assignment: Assignment, valid: Any) -> dict:
        raise NotImplementedError

    def sql_answer_saved(
        self, *, assignment: Assignment, valid: Any, rows: list, stamp: datetime
    ) -> None:
        """Hand the rows the INSERT returned over to `assignment`, if rendering
        reads them."""


def item_kind(campaign_kind: str) -> ItemKind:
    """The item kind of a campaign kind (`Campaign.kind`)."""
    return REGISTRY[campaign_kind]


from annotation.items.pairwise import PAIRWISE  # noqa: E402
from annotation.items.pointwise import POINTWISE  # noqa: E402

REGISTRY: dict[str, ItemKind] = {k.campaign_kind: k for k in (POINTWISE, PAIRWISE)}

__all__ = ["PAIRWISE", "POINTWISE", "REGISTRY", "ItemKind", "item_kind"]
