"""The rater loop's hot path in raw SQL, for PostgreSQL (`services.rating` dispatches; the rules and texts are those of `services.serving`).

`assignment_next` and `rating_submit` are what every rater calls for every response.
Through the ORM each cost a dozen statements, most of the time spent compiling them in
Python. Here the common cases are a few hand-written statements with the same effects:

- serve: one statement resumes the rater's live assignment (extending its lock) or
  picks the next free item (``FOR UPDATE SKIP LOCKED``, breadth-first toward the
  overlap, lowest position), inserts the assignment (or revives the rater's own
  expired one), takes the slot, and returns the form's data (response, instruction,
  skills, the rater's counts);
- submit: one statement locks the assignment and reads what validation needs; one
  more inserts the scores (``UNNEST``), moves the slot from reserved to submitted and
  closes the assignment.

Anything else (nothing free, quota messages, expired locks, late, repeated or refused
submits, paused campaigns, pairwise campaigns) returns ``None`` and `services.rating`
runs its ORM code (for serve in the same transaction, for submit in a transaction of
its own, as a refused late submit commits its note), so the rare paths keep one
implementation. Callers hold the locks the ORM path takes (the rater's user row for
serving). Statements go through `sqlrows.prepared_cursor` (parsed and planned once per
connection). Column lists come from the models' `_meta`, so columns added later
(nullable or with a Python default) are filled like the ORM would fill them.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from functools import cache

from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from annotation.items import POINTWISE, REGISTRY, ItemKind
from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    Dataset,
    InstructionSkill,
    Response,
    Rubric,
    Skill,
)
from annotation.selectors.rating import SKILL_SOURCES
from annotation.services.serving import (
    REASON_NEW,
    REASON_NEW_MANY,
    REASON_PARTLY,
    REVIVED_REASON,
)
from annotation.sqlrows import from_row, prepared_cursor

SERVED = Assignment.Status.SERVED.value
SUBMITTED = Assignment.Status.SUBMITTED.value
SKIPPED = Assignment.Status.SKIPPED.value
EXPIRED = Assignment.Status.EXPIRED.value

# The assignment columns the hot path reads back, in the model's field order: that is
# the order `Model.from_db` (`sqlrows.from_row`) assigns values in.
ASSIGNMENT_FIELDS = (
    "id",
    "campaign_id",
    "item_id",
    "response_id",
    "pair_id",
    "shown_order",
    "rater_id",
    "status",
    "reason",
    "served_at",
    "expires_at",
    "submitted_at",
    "closed_at",
    "active_seconds",
    "skip_reason",
    "critique",
    "note",
    "updated_at",
    "gold",
    "qualification_id",
)
SKILL_FIELDS = (
    "id",
    "key",
    "name",
    "ability",
    "criteria",
    "anchor_1",
    "anchor_2",
    "anchor_3",
    "anchor_4",
    "anchor_5",
    "position",
    "kind",
    "scale_min",
    "scale_max",
    "scale_anchors",
    "labels",
    "allow_na",
    "group",
)

# Skill columns that are JSON: sent as text inside the aggregated JSON, so that
# `from_row` decodes them with the field's own converter (as the ORM would).
_JSON_SKILL_FIELDS = {"scale_anchors", "labels"}


def enabled(campaign: Campaign | None = None) -> bool:
    """The raw path runs on PostgreSQL only (setting RATING_FAST_SQL=False turns it
    off), and serves campaigns whose item kind has it (`ItemKind.sql_fast_path`:
    pointwise) without gold items, a qualification or a sampling plan (gold ones
    take the ORM path, which interleaves them)."""
    from django.conf import settings

    if connection.vendor != "postgresql" or not getattr(
        settings, "RATING_FAST_SQL", True
    ):
        return False
    if campaign is None:
        return True
    # Gold items are interleaved by the ORM rules (services.gold), not here; a
    # sampling campaign's reasons carry each item's probability (`sampled_reason`),
    # which the ORM path formats (a sample is small, so its speed is not at stake).
    return (
        _takes_fast_path(getattr(campaign, "kind", None))
        and not getattr(campaign, "gold_rate", 0)
        and not getattr(campaign, "qualification_size", 0)
        and not getattr(campaign, "sampling", None)
    )


def _takes_fast_path(kind) -> bool:
    """Whether a campaign of `kind` (None: a pointwise one) takes this path."""
    return REGISTRY[kind or POINTWISE.campaign_kind].sql_fast_path


def _has_field(model, name: str) -> bool:
    return any(f.name == name for f in model._meta.concrete_fields)


def _t(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _json(value):
    return json.loads(value) if isinstance(value, str | bytes) else value


def _skills_json(columns: tuple[str, ...], order: str, alias: str = "s") -> str:
    cols = ", ".join(
        f"{alias}.{connection.ops.quote_name(c)}"
        + ("::text" if c in _JSON_SKILL_FIELDS else "")
        for c in columns
    )
    return f"json_agg(json_build_array({cols}) ORDER BY {order})"


@cache
def _skills_sql(columns: tuple[str, ...]) -> dict[str, str]:
    """Per skill mode, the SQL expression that yields the skills to score as JSON.

    Expects ``c`` (the campaign) and ``r`` (the response) in scope; renders
    `selectors.rating.SKILL_SOURCES` (the rule `assignment_skills` applies).
    """
    links = (
        f"(SELECT {_skills_json(columns, 'l.rank')} FROM {_t(InstructionSkill)} l "
        f"JOIN {_t(Skill)} s ON s.id = l.skill_id WHERE l.instruction_id = r.instruction_id)"
    )
    rubric = (
        f"(SELECT {_skills_json(columns, 's.position, s.id')} FROM {_t(Skill)} s "
        f"WHERE s.rubric_id = (SELECT d.rubric_id FROM {_t(Dataset)} d "
        "WHERE d.id = c.dataset_id))"
    )
    chosen_table = connection.ops.quote_name(
        Campaign.chosen_skills.through._meta.db_table
    )
    chosen = (
        f"(SELECT {_skills_json(columns, 's.position, s.id')} FROM {chosen_table} cs "
        f"JOIN {_t(Skill)} s ON s.id = cs.skill_id WHERE cs.campaign_id = c.id)"
    )
    by_source = {"chosen": chosen, "instruction": links, "rubric": rubric}
    per_mode = {
        mode: f"COALESCE({', '.join(by_source[x] for x in sources)}, '[]'::json)"
        for mode, sources in SKILL_SOURCES.items()
    }
    cases = " ".join(
        f"WHEN '{mode.value}' THEN {expr}" for mode, expr in per_mode.items()
    )
    return {
        **per_mode,
        "any": f"CASE c.skill_mode {cases} END",
        **{
            f"source:{name}": f"COALESCE({expr}, '[]'::json)"
            for name, expr in by_source.items()
        },
    }


def _skills(rows, columns: tuple[str, ...]) -> list[Skill]:
    return [from_row(Skill, columns, row) for row in _json(rows) or []]


def _assignment_cols(alias: str) -> str:
    return ", ".join(
        f"{alias}.{connection.ops.quote_name(f)}" for f in ASSIGNMENT_FIELDS
    )


@cache
def _insert_columns(kind: ItemKind) -> tuple[tuple[str, ...], str, frozenset[str]]:
    """The assignment INSERT's column list, its SELECT list over ``pick`` and the
    fields it sets, for items of `kind`.

    Every concrete column is named; those the hot path does not set get their field's
    Python default as a parameter (``%(d_<name>)s``), as `Model.save` would. The
    kind's own fields (`ItemKind.extra_sql`, what `ItemKind.extra` gives the ORM)
    are set from ``pick``.
    """
    from_pick = {
        "campaign_id": "%(campaign)s",
        "item_id": "pick.id",
        "response_id": "pick.response_id",
        "rater_id": "%(rater)s",
        "status": f"'{SERVED}'",
        "reason": (
            f"CASE WHEN pick.submitted > 0 THEN {_reason_sql(kind, REASON_PARTLY)} "
            f"WHEN pick.target > 1 THEN {_reason_sql(kind, REASON_NEW_MANY)} "
            f"ELSE {_reason_sql(kind, REASON_NEW)} END"
        ),
        "served_at": "%(now)s",
        "expires_at": "%(expires)s",
        **kind.extra_sql,
    }
    columns, values = [], []
    for field in Assignment._meta.concrete_fields:
        if field.primary_key:
            continue
        columns.append(connection.ops.quote_name(field.column))
        values.append(from_pick.get(field.attname, f"%(d_{field.attname})s"))
    return tuple(columns), ", ".join(values), frozenset(from_pick)


def _reason_sql(kind: ItemKind, template: str) -> str:
    """A `services.serving` reason template as a SQL text expression over ``pick``
    (with the kind's noun and verb), so both paths record the same words."""
    text = template.format(
        noun=kind.noun,
        verb=kind.verb,
        submitted="\0submitted\0",
        target="\0target\0",
    )
    parts = []
    for i, piece in enumerate(text.split("\0")):
        if i % 2:
            parts.append(f"pick.{piece}")
        elif piece:
            parts.append("'" + piece.replace("'", "''") + "'")
    return "(" + " || ".join(parts) + ")"


def _defaults(exclude) -> dict:
    out = {}
    for field in Assignment._meta.concrete_fields:
        if field.primary_key or field.attname in exclude:
            continue
        out[f"d_{field.attname}"] = field.get_db_prep_save(
            field.get_default(), connection
        )
    return out


def _form_sql(kind: ItemKind, skill_mode: str) -> str:
    """The statement's last SELECT over ``got`` (the served assignment): the rows the
    form shows when the kind has them (`ItemKind.sql_form`), then the rater's
    counts."""
    a = _t(Assignment)
    counts = f"""(SELECT count(*) FROM {a} p WHERE p.campaign_id = %(campaign)s
        AND p.rater_id = %(rater)s AND p.status = '{SUBMITTED}'),
    (SELECT count(*) FROM {a} p WHERE p.campaign_id = %(campaign)s
        AND p.rater_id = %(rater)s AND p.status = '{SKIPPED}')"""
    columns, joins = kind.sql_form(
        skills=_skills_sql(SKILL_FIELDS), skill_mode=skill_mode
    )
    if not columns:
        return f"SELECT {_assignment_cols('got')}, {counts} FROM got"
    return f"""SELECT {_assignment_cols("got")},
    {columns},
    {counts}
FROM got
JOIN {_t(Campaign)} c ON c.id = got.campaign_id
{joins}"""


@cache
def _next_sql(kind: ItemKind, skill_mode: str, with_quota: bool) -> str:
    a, i = _t(Assignment), _t(CampaignItem)
    columns, select, _ = _insert_columns(kind)
    quota = (
        f" AND (SELECT count(*) FROM {a} q WHERE q.campaign_id = %(campaign)s "
        f"AND q.rater_id = %(rater)s AND q.status IN ('{SUBMITTED}', '{SERVED}')) "
        "< %(quota)s"
        if with_quota
        else ""
    )
    cols = ", ".join(connection.ops.quote_name(f) for f in ASSIGNMENT_FIELDS)
    # The item's key (`ItemKind.key`): one unique index per kind, each partial on
    # the kind's rows (`ItemKind.sql_where`).
    key = connection.ops.quote_name(kind.key)
    return f"""
WITH live AS (
    UPDATE {a} SET expires_at = %(expires)s
    WHERE id = (
        SELECT id FROM {a} WHERE campaign_id = %(campaign)s AND rater_id = %(rater)s
        AND status = '{SERVED}' AND expires_at > %(now)s ORDER BY served_at LIMIT 1
    )
    RETURNING {cols}
), pick AS (
    SELECT i.id, i.response_id, i.pair_id, i.submitted, i.target FROM {i} i
    WHERE i.campaign_id = %(campaign)s AND i.open_slots > 0 AND i.{kind.sql_where}
    AND NOT EXISTS (SELECT 1 FROM live){quota}
    AND NOT EXISTS (
        SELECT 1 FROM {a} m WHERE m.campaign_id = %(campaign)s
        AND m.{key} = i.{key} AND m.rater_id = %(rater)s
        AND m.status <> '{EXPIRED}'
    )
    ORDER BY i.submitted DESC, i.position LIMIT 1
    FOR UPDATE OF i SKIP LOCKED
), ins AS (
    INSERT INTO {a} ({", ".join(columns)})
    SELECT {select} FROM pick
    ON CONFLICT (campaign_id, {key}, rater_id) WHERE {kind.sql_where}
    DO UPDATE SET
        status = '{SERVED}', reason = '{REVIVED_REASON}',
        served_at = EXCLUDED.served_at, expires_at = EXCLUDED.expires_at,
        closed_at = NULL
    WHERE {a}.status = '{EXPIRED}'
    RETURNING {cols}
), slot AS (
    UPDATE {i} SET reserved = reserved + 1, open_slots = open_slots - 1
    WHERE id IN (SELECT item_id FROM ins)
    RETURNING id
), got AS (
    SELECT {cols} FROM live UNION ALL SELECT {cols} FROM ins
)
{_form_sql(kind, skill_mode)}
"""


def serve(*, campaign: Campaign, rater: User, now: datetime, ttl: timedelta):
    """Resume or serve, in the caller's transaction (rater row already locked).

    Returns ``(assignment, skills, (submitted, skipped))``, or ``None`` when neither
    a live assignment nor a free item was found (the caller then runs the ORM path
    for the message). For a kind whose form rows come from here (`ItemKind.sql_form`)
    the assignment's item (response or pair, with the instruction) is loaded and
    `skills` lists the criteria to ask; otherwise `skills` is None.
    """
    kind = REGISTRY[campaign.kind]
    params = {
        "campaign": campaign.pk,
        "rater": rater.pk,
        "now": now,
        "expires": now + ttl,
        "quota": campaign.rater_quota,
        **_defaults(_insert_columns(kind)[2]),
    }
    sql = _next_sql(kind, str(campaign.skill_mode), campaign.rater_quota is not None)
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    k = len(ASSIGNMENT_FIELDS)
    assignment = from_row(Assignment, ASSIGNMENT_FIELDS, row[:k])
    assignment.campaign = campaign
    skills = kind.sql_form_load(
        assignment, row[k:-2], lambda rows: _skills(rows, SKILL_FIELDS)
    )
    return assignment, skills, tuple(row[-2:])


# What `Scale.parse` needs to validate a score, besides the skill's identity.
SUBMIT_SKILL_FIELDS = (
    "id",
    "key",
    "position",
    "kind",
    "scale_min",
    "scale_max",
    "labels",
    "allow_na",
)


@cache
def _submit_read_sql() -> str:
    a, c, d, rb, r = _t(Assignment), _t(Campaign), _t(Dataset), _t(Rubric), _t(Response)
    kind = "c.kind" if _has_field(Campaign, "kind") else "NULL"
    return f"""
SELECT {_assignment_cols("a")}, c.status, {kind}, rb.id, rb.frozen_at, r.instruction_id,
    {_skills_sql(SUBMIT_SKILL_FIELDS)["any"]}, c.critique
FROM {a} a
JOIN {c} c ON c.id = a.campaign_id
JOIN {d} d ON d.id = c.dataset_id
JOIN {rb} rb ON rb.id = d.rubric_id
JOIN {r} r ON r.id = a.response_id
WHERE a.id = %s
FOR UPDATE OF a
"""


def submit_read(assignment_id: int):
    """Lock an assignment and read what submit needs, in one statement.

    Returns ``(assignment, campaign_status, rubric_id, rubric_frozen_at, skills,
    critique_mode)`` or ``None`` for an unknown id. The ownership check is the caller's. The campaign
    status is None for a campaign whose kind does not take this path (the ORM path
    handles it).
    """
    with prepared_cursor() as cursor:
        cursor.execute(_submit_read_sql(), [assignment_id])
        row = cursor.fetchone()
    if row is None:
        return None
    k = len(ASSIGNMENT_FIELDS)
    assignment = from_row(Assignment, ASSIGNMENT_FIELDS, row[:k])
    (
        campaign_status,
        kind,
        rubric_id,
        frozen_at,
        instruction_id,
        skills_rows,
        critique_mode,
    ) = row[k:]
    if not _takes_fast_path(kind):
        campaign_status = None
    assignment.instruction_id = instruction_id
    return (
        assignment,
        campaign_status,
        rubric_id,
        frozen_at,
        _skills(skills_rows, SUBMIT_SKILL_FIELDS),
        critique_mode,
    )


@cache
def _submit_write_sql(kind: ItemKind) -> str:
    a, i = _t(Assignment), _t(CampaignItem)
    return f"""
WITH slot AS (
    UPDATE {i} SET reserved = reserved - 1, submitted = submitted + 1
    WHERE id = %(item)s AND NOT gold RETURNING id
), done AS (
    UPDATE {a} SET status = '{SUBMITTED}', submitted_at = %(now)s, closed_at = %(now)s,
        active_seconds = %(active)s
    WHERE id = %(assignment)s RETURNING id
)
{kind.sql_answer_insert()}
"""


def submit_write(*, kind: ItemKind, assignment: Assignment, valid, now) -> None:
    """Save a served assignment's checked answer (`ItemKind.clean_read`), move its
    slot to submitted and close it, in one statement: the kind's INSERT
    (`ItemKind.sql_answer_insert`) after the slot and the assignment's UPDATEs.

    The caller holds the assignment's row lock (`submit_read`) and checked that it is
    ``served`` in an active campaign. The kind then hands the saved rows over to the
    assignment (`ItemKind.sql_answer_saved`).
    """
    # The rows' own timestamps are the clock's, as auto_now(_add) would set them.
    stamp = timezone.now()
    params = {
        "item": assignment.item_id,
        "assignment": assignment.pk,
        "now": now,
        "stamp": stamp,
        "active": assignment.active_seconds,
        **kind.sql_answer_params(assignment=assignment, valid=valid),
    }
    with prepared_cursor() as cursor:
        cursor.execute(_submit_write_sql(kind), params)
        rows = cursor.fetchall()
    kind.sql_answer_saved(assignment=assignment, valid=valid, rows=rows, stamp=stamp)
