"""Qualification: gold items a rater answers before any real item of a campaign.

A campaign with `qualification_size` N > 0 serves each rater N of its gold items
first (`qualification_gate`, called by `serving.serve_next_locked`): the same N for
every rater on a first attempt (an order seeded by the campaign), each recorded on the
rater's `Qualification` attempt. The attempt is graded when its N items are done
(`qualification_grade`: on the submit of the last one, or at the next request): the
share of right answers over the criteria the rater was asked, right by the campaign's
rule (`exact`, or `within1`: one point off still right; labels always exactly), a
skipped item counting every expected criterion as wrong. At or above the pass mark
the rater passes and is served real items (and interleaved gold ones) from then on;
below it the rater is served nothing more and told why, with each item's expected
scores (`selectors.qualification_report`). A researcher may allow one retry
(`qualification_allow_retry`): a second attempt on N gold items the rater has not
seen.

Qualification items are gold items (`Assignment.gold`): their scores stay out of
every analysis of responses, like any gold item's.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    GoldItem,
    Qualification,
)
from annotation.scales import scale_of
from annotation.selectors.gold import (
    gold_answers_seen,
    qualification_answers,
    qualification_tolerance,
)
from annotation.services.gold import gold_answers_shown_mark, gold_pick
from flaskapp import bounds, workspaces
from flaskapp.errors import DomainError, Problem

MAX_ATTEMPTS = 2  # the first, and one retry a researcher allows


def qualification_problems(
    *, dataset, size, pass_mark, rule, rater_quota=None
) -> list[Problem]:
    """The qualification settings of a new campaign: bounds, a known rule, enough gold
    items in the dataset, and a quota (if any) that leaves room for real items."""
    problems = []
    if p := bounds.QUALIFICATION_SIZE.problem(size, "qualification_size"):
        problems.append(p)
    if p := bounds.QUALIFICATION_PASS.problem(pass_mark, "qualification_pass"):
        problems.append(
            Problem(
                f"{pass_mark!r}: a share of right answers, from 0 to 1",
                field="qualification_pass",
            )  # fmt: skip
        )
    if rule not in Campaign.QualificationRule.values:
        problems.append(
            Problem(
                f"{rule!r} is not one of {', '.join(Campaign.QualificationRule.values)}",
                field="qualification_rule",
            )
        )
    if problems or not size:
        return problems
    golds = GoldItem.objects.filter(dataset=dataset).count()
    if golds < size:
        problems.append(
            Problem(
                f"the dataset has {golds} gold item(s); a qualification of {size} "
                "needs as many (mark more, or ask for fewer)",
                field="qualification_size",
            )
        )
    if rater_quota is not None and rater_quota <= size:
        problems.append(
            Problem(
                f"a quota of {rater_quota} leaves no real item after a qualification "
                f"of {size}",
                field="rater_quota",
            )
        )
    return problems


@dataclass
class Gate:
    """What qualification says about the rater's next item: serve `item` as part of
    `attempt`, or stop with `message`; both None/empty: no qualification in the way."""

    attempt: Qualification | None = None
    item: CampaignItem | None = None
    message: str = ""


def _latest(campaign: Campaign, rater: User) -> Qualification | None:
    return (
        Qualification.objects.filter(campaign=campaign, rater=rater)
        .order_by("-attempt")
        .first()
    )


def _done(attempt: Qualification) -> int:
    return (
        Assignment.objects.filter(qualification=attempt)
        .exclude(status=Assignment.Status.EXPIRED)
        .exclude(status=Assignment.Status.SERVED)
        .count()
    )


def failed_message(attempt: Qualification) -> str:
    right = f"{attempt.right} of {attempt.checked}"
    share = f"{(attempt.accuracy or 0):.0%}"
    return (
        f"You did not pass this campaign's qualification: {right} answers right "
        f"({share}; the pass mark is {attempt.pass_mark:.0%}). No further items will "
        "be served to you; your answers and the expected ones follow."
    )


def qualification_gate(*, campaign: Campaign, rater: User) -> Gate:
    """Called under the rater's row lock, after a live assignment was resumed: the
    rater's attempt (started here on the first request), the next qualification item
    to serve, or why nothing is served. Grades a finished attempt first."""
    if not campaign.qualification_size:
        return Gate()
    attempt = _latest(campaign, rater)
    if attempt is None:
        attempt = Qualification.objects.create(
            campaign=campaign,
            rater=rater,
            attempt=1,
            items=campaign.qualification_size,
            pass_mark=campaign.qualification_pass,
            rule=campaign.qualification_rule,
        )
    if attempt.status == Qualification.Status.IN_PROGRESS:
        if _done(attempt) >= attempt.items:
            attempt = qualification_grade(attempt)
        else:
            item = gold_pick(campaign=campaign, rater=rater, per_rater=False)
            if item is not None:
                return Gate(attempt, item)
            attempt = qualification_grade(attempt)  # gold ran out: grade what is done
    if attempt.status == Qualification.Status.PASSED:
        return Gate(attempt)
    return Gate(attempt, message=failed_message(attempt))


def qualification_grade(attempt: Qualification) -> Qualification:
    """Grade a finished attempt (idempotent for a graded one): right / checked over
    the criteria the rater was asked (a criterion the campaign did not ask is not
    counted; a skipped item's are all wrong), passed at or above the pass mark."""
    if attempt.status != Qualification.Status.IN_PROGRESS:
        return attempt
    tolerance = qualification_tolerance(attempt.rule)
    checked = right = 0
    for _, _, rows in qualification_answers(attempt):
        for skill, want, mine in rows:
            if mine == "missing":
                continue
            checked += 1
            if mine != "skipped":
                right += scale_of(skill).matches(want, mine, tolerance)
    accuracy = right / checked if checked else 0.0
    attempt.checked, attempt.right, attempt.accuracy = checked, right, accuracy
    passed = checked > 0 and accuracy >= attempt.pass_mark - 1e-12
    attempt.status = (
        Qualification.Status.PASSED if passed else Qualification.Status.FAILED
    )
    attempt.finished_at = timezone.now()
    attempt.save(
        update_fields=["checked", "right", "accuracy", "status", "finished_at"]
    )
    if not passed:  # the report shows the expected answers: training from now on
        gold_answers_shown_mark(
            assignment_ids=attempt.assignments.values_list("pk", flat=True)
        )
    return attempt


def qualification_after_submit(assignment: Assignment) -> None:
    """After a qualification item is submitted: grade its attempt when it was the
    last one (no query for any other assignment)."""
    if not assignment.qualification_id:
        return
    with transaction.atomic():
        attempt = Qualification.objects.select_for_update().get(
            pk=assignment.qualification_id
        )
        if (
            attempt.status == Qualification.Status.IN_PROGRESS
            and _done(attempt) >= attempt.items
        ):
            qualification_grade(attempt)


def qualification_allow_retry(
    *, campaign: Campaign, rater: User, user: User
) -> Qualification:
    """Let a rater who failed the qualification try once more, on gold items they have
    not seen. Refused (DomainError, nothing changed) unless the rater's latest attempt
    failed and was the first, and enough unseen gold items are left."""
    workspaces.require_object_role(user, campaign, workspaces.RESEARCHER)
    with transaction.atomic():
        latest = (
            Qualification.objects.select_for_update()
            .filter(campaign=campaign, rater=rater)
            .order_by("-attempt")
            .first()
        )
        if latest is None or latest.status != Qualification.Status.FAILED:
            raise DomainError(
                f"{rater.username} has no failed qualification in this campaign",
                [Problem("has not failed the qualification", field="rater")],
            )
        if latest.attempt >= MAX_ATTEMPTS:
            raise DomainError(
                f"{rater.username} already had their retry",
                [Problem("one retry only", field="rater")],
            )
        seen = Assignment.objects.filter(campaign=campaign, rater=rater).exclude(
            status=Assignment.Status.EXPIRED
        )
        unseen = (
            CampaignItem.objects.filter(campaign=campaign, gold=True)
            .exclude(response_id__in=seen.values("response_id"))
            .filter(~gold_answers_seen(rater_id=rater.pk))
            .count()
        )
        if unseen < campaign.qualification_size:
            raise DomainError(
                f"only {unseen} gold item(s) are left that {rater.username} has not "
                f"seen; a retry needs {campaign.qualification_size}",
                [Problem("not enough unseen gold items", field="rater")],
            )
        latest.retry_allowed_by = user
        latest.retry_allowed_at = timezone.now()
        latest.save(update_fields=["retry_allowed_by", "retry_allowed_at"])
        return Qualification.objects.create(
            campaign=campaign,
            rater=rater,
            attempt=latest.attempt + 1,
            items=campaign.qualification_size,
            pass_mark=campaign.qualification_pass,
            rule=campaign.qualification_rule,
        )
