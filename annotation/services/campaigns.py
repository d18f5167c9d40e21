"""Rating campaigns: creation (one `CampaignItem` per response to rate), status, raters,
critique settings."""

from __future__ import annotations

import hashlib

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from annotation import roles
from annotation.errors import DomainError, Problem
from annotation.models import Campaign, CampaignItem, Dataset, Response, Skill
from annotation.services.gold import gold_items_create, gold_rate_problems
from annotation.services.import_rows import copy_rows
from annotation.services.qualification import qualification_problems
from flaskapp.bounds import LOCK_TTL_MINUTES, OVERLAP, OVERLAP_PERCENT, RATER_QUOTA

# The longest minimum a campaign may ask of a critique (a rating's critique holds up
# to `services.rating.MAX_CRITIQUE` characters).
MAX_CRITIQUE_MIN_LENGTH = 5000


def _in_overlap_sample(campaign_id: int, response_id: int, percent: int) -> bool:
    """A stable pseudo-random choice of `percent` % of responses (same on every run)."""
    if percent >= 100:
        return True
    if percent <= 0:
        return False
    digest = hashlib.sha256(f"{campaign_id}:{response_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % 10000 < percent * 100


def _serving_order_key(campaign_id: int, response_id: int) -> str:
    """The shuffle of a campaign's items: items sorted by this key (then by id).

    A hash of campaign and response ids: the same order on every run and database,
    unrelated to model or instruction order. `_ITEMS_SQL` computes the same key.
    """
    return hashlib.md5(f"{campaign_id}/{response_id}".encode()).hexdigest()


# PostgreSQL: the campaign's items in one statement, with the same order key as
# `_serving_order_key` and the same overlap sample as `_in_overlap_sample` (the first
# 4 bytes of a SHA-256, big-endian, modulo 10,000).
_ITEMS_SQL = """
INSERT INTO annotation_campaignitem
    (campaign_id, response_id, target, submitted, reserved, open_slots, position)
SELECT %(campaign)s, id, target, 0, 0, target,
       row_number() OVER (ORDER BY order_key COLLATE "C", id) - 1
FROM (
    SELECT r.id,
           md5(%(campaign)s::text || '/' || r.id::text) AS order_key,
           CASE
               WHEN %(percent)s >= 100 THEN %(overlap)s
               WHEN %(percent)s <= 0 THEN 1
               WHEN ('x' || substr(encode(sha256(convert_to(
                        %(campaign)s::text || ':' || r.id::text, 'UTF8')), 'hex'), 1, 8)
                    )::bit(32)::bigint %% 10000 < %(percent)s * 100
                   THEN %(overlap)s
               ELSE 1
           END AS target
    FROM annotation_response r
    JOIN annotation_instruction i ON i.id = r.instruction_id
    WHERE i.dataset_id = %(dataset)s
      AND (cardinality(%(models)s::text[]) = 0 OR r.model_name = ANY(%(models)s))
      AND NOT (%(gold)s AND EXISTS (
          SELECT 1 FROM annotation_golditem g WHERE g.response_id = r.id))
) AS picked
"""


def _sampled_items_create(campaign: Campaign, sample: list[tuple[int, float]]) -> int:
    """A sampling campaign's items: one per sampled response, in the plan's order
    (their `position`), each with its inclusion probability. The caller checked that
    the responses are the campaign's (`services.sampling`)."""
    if connection.vendor == "postgresql":
        # As in `_items_create`: no referenced response may go before the commit.
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE annotation_response IN SHARE MODE")
    target = campaign.overlap
    rows = [
        (campaign.pk, response_id, target, 0, 0, target, position, probability)
        for position, (response_id, probability) in enumerate(sample)
    ]
    copy_rows(
        CampaignItem,
        ["campaign_id", "response_id", "target", "submitted", "reserved",
         "open_slots", "position", "sampling_probability"],
        rows,
    )  # fmt: skip
    return len(rows)


def _items_create(campaign: Campaign, models: list[str]) -> int:
    """Create the campaign's items (one per response to rate); return how many.
    With a gold rate or a qualification, the dataset's gold responses are not among
    them (they become the campaign's gold items, `services.gold.gold_items_create`).

    One INSERT ... SELECT on PostgreSQL; elsewhere the ids are read, ordered and
    inserted from Python by the same rules.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # Items hold no foreign-key constraint on their response (see the model):
            # no response may be deleted between this read and the commit. Reads
            # and the judges' foreign-key checks go on; imports wait.
            cursor.execute("LOCK TABLE annotation_response IN SHARE MODE")
            # The order sort fits in memory (255,000 keys spill at the default).
            cursor.execute("SET LOCAL work_mem = '64MB'")
            cursor.execute(
                _ITEMS_SQL,
                {
                    "campaign": campaign.pk,
                    "dataset": campaign.dataset_id,
                    "models": list(models),
                    "overlap": campaign.overlap,
                    "percent": campaign.overlap_percent,
                    "gold": campaign.uses_gold,
                },
            )
            return cursor.rowcount
    responses = Response.objects.filter(instruction__dataset_id=campaign.dataset_id)
    if models:
        responses = responses.filter(model_name__in=models)
    if campaign.uses_gold:
        responses = responses.filter(gold__isnull=True)
    response_ids = sorted(
        responses.values_list("pk", flat=True),
        key=lambda rid: (_serving_order_key(campaign.pk, rid), rid),
    )
    rows = []
    for position, response_id in enumerate(response_ids):
        target = (
            campaign.overlap
            if _in_overlap_sample(campaign.pk, response_id, campaign.overlap_percent)
            else 1
        )
        rows.append((campaign.pk, response_id, target, 0, 0, target, position))
    copy_rows(
        CampaignItem,
        ["campaign_id", "response_id", "target", "submitted", "reserved",
         "open_slots", "position"],
        rows,
    )  # fmt: skip
    return len(rows)


def campaign_option_problems(
    *, overlap, overlap_percent, lock_ttl_minutes, rater_quota, rater_count: int = 0
) -> list[Problem]:
    """The numeric options every kind of campaign shares, within `flaskapp.bounds`
    (the same bounds as the model fields, forms and serializers), and the overlap
    against the raters chosen at creation.

    With `rater_count` raters chosen (0: none yet, they are added later), an overlap
    above it is refused: a rater never gets the same item twice, so `overlap` raters
    per item could never be reached.
    """
    checks = [
        OVERLAP.problem(overlap, "overlap"),
        OVERLAP_PERCENT.problem(overlap_percent, "overlap_percent"),
        LOCK_TTL_MINUTES.problem(lock_ttl_minutes, "lock_ttl_minutes"),
        RATER_QUOTA.problem(rater_quota, "rater_quota", optional=True),
    ]
    problems = [p for p in checks if p is not None]
    if (
        rater_count
        and not any(p.field == "overlap" for p in problems)
        and overlap > rater_count
    ):
        problems.append(
            Problem(
                f"{overlap} raters per item, but only {rater_count} "
                f"rater{'s' if rater_count != 1 else ''} chosen: choose at least "
                f"{overlap} raters or lower the overlap",
                field="overlap",
            )
        )
    return problems


def campaign_critique_problems(*, critique, critique_min_length) -> list[Problem]:
    """Problems with a campaign's critique settings, naming `critique` or
    `critique_min_length`: the mode is one of `Campaign.Critique`, the minimum a whole
    number 0..MAX_CRITIQUE_MIN_LENGTH (and 0 when no critique is asked for)."""
    problems = []
    if critique not in Campaign.Critique.values:
        problems.append(
            Problem(
                f"unknown critique setting {critique!r}; use "
                + ", ".join(Campaign.Critique.values),
                field="critique",
            )
        )
    if (
        isinstance(critique_min_length, bool)
        or not isinstance(critique_min_length, int)
        or not 0 <= critique_min_length <= MAX_CRITIQUE_MIN_LENGTH
    ):
        problems.append(
            Problem(
                f"must be a whole number 0-{MAX_CRITIQUE_MIN_LENGTH}",
                field="critique_min_length",
            )
        )
    elif critique == Campaign.Critique.OFF and critique_min_length:
        problems.append(
            Problem(
                "is set, but the campaign asks for no critique; choose a critique "
                "setting or leave it at 0",
                field="critique_min_length",
            )
        )
    return problems


def campaign_set_critique(
    *, campaign: Campaign, critique: str, critique_min_length: int, user: User
) -> Campaign:
    """Change whether raters write a critique, and its minimum length (researchers).

    Applies to ratings submitted from now on; ratings already submitted keep what
    they have. A closed campaign is final and refused. `DomainError` naming the field
    for bad input; then nothing is written.
    """
    roles.require_researcher(user)
    if campaign.kind != Campaign.Kind.POINTWISE:
        raise DomainError(
            "pairwise campaigns ask for no critique",
            [Problem("is not used by pairwise campaigns", field="critique")],
        )
    if campaign.status == Campaign.Status.CLOSED:
        raise DomainError("this campaign is closed; its settings are final")
    problems = campaign_critique_problems(
        critique=critique, critique_min_length=critique_min_length
    )
    if problems:
        raise DomainError("the critique settings were not saved", problems)
    campaign.critique = critique
    campaign.critique_min_length = critique_min_length
    campaign.save(update_fields=["critique", "critique_min_length"])
    return campaign


def campaign_create(
    *,
    name: str,
    dataset: Dataset,
    user: User,
    models: list[str] | None = None,
    skill_mode: str = Campaign.SkillMode.INSTRUCTION,
    chosen_skill_keys: list[str] | None = None,
    overlap: int = 1,
    overlap_percent: int = 100,
    show_reference: bool = True,
    show_model_names: bool = False,
    lock_ttl_minutes: int = 30,
    rater_quota: int | None = None,
    guidelines: str = "",
    raters: list[User] | None = None,
    critique: str = Campaign.Critique.OFF,
    critique_min_length: int = 0,
    gold_rate: int = 0,
    training_phase: bool = False,
    qualification_size: int = 0,
    qualification_pass: float = 0.8,
    qualification_rule: str = Campaign.QualificationRule.EXACT,
    sample: list[tuple[int, float]] | None = None,
    sampling: dict | None = None,
) -> Campaign:
    """Create a campaign and one `CampaignItem` per response to rate, in one transaction.

    With `sample` (a sampling campaign, built by `services.sampling.
    sampling_campaign_create`, which checks it): only those (response id,
    inclusion probability) pairs are items, served in that order; `sampling`
    (the plan's description) is stored on the campaign.

    `gold_rate` N > 0 interleaves the dataset's gold items, one in every N items a
    rater is served (`services.gold`); they are then not real items of the campaign.
    `training_phase` shows raters the expected scores after each gold item.
    `qualification_size` N > 0 makes each rater answer N gold items first and serves
    real ones only at a share of right answers >= `qualification_pass` (by
    `qualification_rule`: exact / within1); see `services.qualification`.

    Any rubric is rated on its own criteria's scales (`annotation.scales`); a campaign
    whose criteria are all categorical is a classification campaign (same serving,
    overlap, blinding and locking). `critique` (off / with_scores / only) asks raters
    for a written critique next to or instead of the scores, of at least
    `critique_min_length` characters.
    Items are served in a shuffled order seeded by the campaign id (so that model and
    instruction order do not bias raters), partly rated ones first. Raises `DomainError`
    naming the field for bad input; then nothing is written.
    """
    roles.require_researcher(user)
    problems: list[Problem] = []
    name = (name or "").strip()
    if not name:
        problems.append(Problem("is empty", field="name"))
    if skill_mode not in Campaign.SkillMode.values:
        problems.append(
            Problem(f"unknown skill mode {skill_mode!r}", field="skill_mode")
        )
    problems += campaign_critique_problems(
        critique=critique, critique_min_length=critique_min_length
    )
    rater_list = list(raters or [])
    problems += gold_rate_problems(dataset=dataset, gold_rate=gold_rate)
    problems += qualification_problems(
        dataset=dataset,
        size=qualification_size,
        pass_mark=qualification_pass,
        rule=qualification_rule,
        rater_quota=rater_quota,
    )
    problems += campaign_option_problems(
        overlap=overlap,
        overlap_percent=overlap_percent,
        lock_ttl_minutes=lock_ttl_minutes,
        rater_quota=rater_quota,
        rater_count=len(rater_list),
    )
    available = set(
        Response.objects.filter(instruction__dataset=dataset)
        .order_by()  # the default ordering would make DISTINCT one row per response
        .values_list("model_name", flat=True)
        .distinct()
    )
    models = sorted(set(models or []))
    unknown_models = [m for m in models if m not in available]
    if unknown_models:
        problems.append(
            Problem(
                f"not in dataset {dataset.name!r}: {', '.join(unknown_models)}",
                field="models",
            )
        )
    chosen: list[Skill] = []
    if chosen_skill_keys and skill_mode != Campaign.SkillMode.CHOSEN:
        problems.append(
            Problem(
                "skills can only be chosen with skill mode `chosen`", field="skills"
            )
        )
    if skill_mode == Campaign.SkillMode.CHOSEN:
        keys = list(dict.fromkeys(chosen_skill_keys or []))
        by_key = {s.key: s for s in Skill.objects.filter(rubric_id=dataset.rubric_id)}
        missing = [k for k in keys if k not in by_key]
        if not keys:
            problems.append(Problem("choose at least one skill", field="skills"))
        if missing:
            problems.append(
                Problem(
                    f"not skills of the dataset's rubric: {', '.join(missing)}",
                    field="skills",
                )
            )
        chosen = [by_key[k] for k in keys if k in by_key]
    not_raters = [u.username for u in rater_list if not roles.is_rater(u)]
    if not_raters:
        problems.append(Problem(f"not raters: {', '.join(not_raters)}", field="raters"))
    if problems:
        raise DomainError("the campaign was not created", problems)

    with transaction.atomic():
        campaign = Campaign.objects.create(
            name=name,
            dataset=dataset,
            models_included=models,
            skill_mode=skill_mode,
            overlap=overlap,
            overlap_percent=overlap_percent,
            show_reference=show_reference,
            show_model_names=show_model_names,
            lock_ttl_minutes=lock_ttl_minutes,
            rater_quota=rater_quota,
            guidelines=guidelines,
            critique=critique,
            critique_min_length=critique_min_length,
            gold_rate=gold_rate,
            training_phase=bool(training_phase),
            qualification_size=qualification_size,
            qualification_pass=qualification_pass,
            qualification_rule=qualification_rule,
            sampling=sampling or {},
            created_by=user,
        )
        if chosen:
            campaign.chosen_skills.set(chosen)
        if rater_list:
            campaign.raters.set(rater_list)
        real = (
            _sampled_items_create(campaign, sample)
            if sample is not None
            else _items_create(campaign, models)
        )
        if real and campaign.uses_gold:
            gold_items_create(campaign, start=real)
        if not real:
            raise DomainError(
                "the campaign has no responses to rate",
                [
                    Problem(
                        "the dataset has no responses for these models", field="models"
                    )
                ],
            )
    if connection.vendor == "postgresql":
        # Fresh statistics, so that the next-item query walks its partial index from
        # the first request on (stale ones can make the planner sort every item).
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE annotation_campaignitem")
    return campaign


def campaign_set_training(*, campaign: Campaign, on: bool, user: User) -> Campaign:
    """Start or end the campaign's training phase: while it is on, a rater sees the
    expected scores and explanation right after submitting a gold item
    (`services.gold.gold_feedback`); outside it, nothing. A closed campaign is refused."""
    roles.require_researcher(user)
    if campaign.status == Campaign.Status.CLOSED:
        raise DomainError("this campaign is closed; its settings are final")
    campaign.training_phase = bool(on)
    campaign.save(update_fields=["training_phase"])
    return campaign


def campaign_set_status(*, campaign: Campaign, status: str, user: User) -> Campaign:
    """Pause, resume or close a campaign. Closing is final; closed campaigns are read-only."""
    roles.require_researcher(user)
    if status not in Campaign.Status.values:
        raise DomainError(
            f"unknown status {status!r}", [Problem("unknown", field="status")]
        )
    if campaign.status == Campaign.Status.CLOSED and status != Campaign.Status.CLOSED:
        raise DomainError("a closed campaign cannot be reopened")
    if status == Campaign.Status.CLOSED:
        campaign.closed_at = campaign.closed_at or timezone.now()
    else:
        campaign.closed_at = None
    campaign.status = status
    campaign.save(update_fields=["status", "closed_at"])
    return campaign


def campaign_set_raters(
    *, campaign: Campaign, raters: list[User], user: User
) -> Campaign:
    """Replace the campaign's raters (researchers and admins; only users with the
    rater role). Existing assignments are kept: a removed rater's submitted work
    stays and counts. Side effect: each removed rater's live locks in this campaign
    are released in the same transaction (status ``expired``, note
    `serving.REMOVED_NOTE`) and their items go back to the pool. That release is done
    by the `m2m_changed` receiver in `annotation.signals`, not here, so that every
    way of removing a rater (this service, the Django admin, a shell) does it; from
    then on every rating operation refuses the rater (`roles.require_campaign_rater`).
    """
    roles.require_researcher(user)
    not_raters = [u.username for u in raters if not roles.is_rater(u)]
    if not_raters:
        raise DomainError(
            "the raters were not changed",
            [Problem(f"not raters: {', '.join(not_raters)}", field="raters")],
        )
    campaign.raters.set(raters)
    return campaign


def campaign_add_rater(*, campaign: Campaign, rater: User, user: User) -> bool:
    """Add one rater to the campaign's raters, keeping the others (researchers and
    admins; only users with the rater role, naming ``rater``). A closed campaign is
    refused, naming ``campaign``: it serves no more work. Returns False, writing
    nothing, when `rater` already is one (idempotent)."""
    roles.require_researcher(user)
    problems = []
    if not roles.is_rater(rater):
        problems.append(Problem(f"not a rater: {rater.username}", field="rater"))
    elif roles.is_synthetic(rater):
        problems.append(
            Problem(
                f"{rater.username} is a synthetic account (generated ratings)",
                field="rater",
            )
        )
    if campaign.status == Campaign.Status.CLOSED:
        problems.append(Problem(f"{campaign.name!r} is closed", field="campaign"))
    if problems:
        raise DomainError("the rater was not added", problems)
    if campaign.raters.filter(pk=rater.pk).exists():
        return False
    campaign.raters.add(rater)
    return True
