"""Human scores imported with a dataset file: checked against the dataset, then
stored as the `HumanScore` rows of one closed campaign per import.

Storage (what the agreement dashboard, exports and pages read, as for rated work):

* one pointwise `Campaign`, status ``closed``, named "Imported scores: <files>",
  whose guidelines say where the scores came from and hold the import key (a digest
  of every score of the import, so importing the same scores again into the same
  dataset adds nothing); its chosen skills are the criteria scored;
* one `CampaignItem` per scored response (target = submitted = its raters);
* one submitted `Assignment` per response and rater (reason "imported");
* one `HumanScore` per criterion scored, with the stored value of `annotation.scales`
  and the rater's rationale.

Raters: each distinct `rater` of the file is an account named
``import:<dataset id>:<rater>``, inactive and with an unusable password (nobody logs
in as it; Django's username rules refuse ":" so no real account can take the name),
created on first use and shared by every import into the same dataset; rows without
a rater belong to the one rater "imported" (`importers.scores.DEFAULT_RATER`).

Nothing here commits: the caller (`imports.import_parsed`) holds the transaction.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.utils import timezone

from annotation.importers.base import ParseResult
from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    Dataset,
    HumanScore,
    Response,
    Rubric,
)
from annotation.scales import Scale, scale_of
from annotation.services.import_report import ImportReport
from annotation.services.rubrics import rubric_freeze
from flaskapp import roles
from flaskapp.errors import Problem

BATCH = 5000
IMPORT_KEY = "import key"


def rubric_scales(rubric: Rubric | None) -> dict[str, Scale]:
    """criterion key -> `Scale` of every criterion of `rubric` (in order)."""
    if rubric is None:
        return {}
    return {s.key: scale_of(s) for s in rubric.skills.order_by("position", "pk")}


def rater_username(dataset: Dataset, rater: str) -> str:
    return f"{roles.IMPORTED_PREFIX}{dataset.pk}:{rater}"


def scores_import_key(parsed: ParseResult) -> str:
    """A digest of every score of the import (order-independent)."""
    rows = sorted(
        json.dumps(
            [
                s.instruction_external_id,
                s.model_name,
                s.rater,
                s.skill_key,
                s.score,
                s.rationale,
            ]
        )
        for s in parsed.scores
    )
    return hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest()[:32]


def scores_plan(
    dataset: Dataset | None,
    parsed: ParseResult,
    *,
    known: set[str],
    existing: set[str],
    report: ImportReport,
) -> list[Problem]:
    """The problems of the rows that point into the dataset (read only).

    `known`: every instruction id the import can point at (stored or being
    imported); `existing`: the ids already stored. A row naming an instruction by id
    only must name a known one, and may not give its content (imported instructions
    are immutable); a row with scores and a model but no response must name a stored
    response. Fills the score counts of `report` (a re-import of the same scores
    counts them unchanged)."""
    problems: list[Problem] = []
    for ext, (file, line, field, content) in parsed.referenced_instructions.items():
        if ext not in known:
            problems.append(
                Problem(
                    f"instruction {ext!r} is not in the dataset (a row without "
                    "instruction text refers to an instruction already imported, by "
                    "its id)",
                    line=line,
                    field=field,
                    file=file,
                )
            )
        elif content is not None and ext in existing:
            problems.append(
                Problem(
                    f"cannot be given for instruction {ext!r}, which is already in the "
                    "dataset; imported instructions are immutable (import into a new "
                    "dataset instead)",
                    line=line,
                    field=field,
                    file=file,
                )
            )
    given = {(r.instruction_external_id, r.model_name) for r in parsed.responses}
    wanted = {
        key: where
        for key, where in parsed.referenced.items()
        if key not in given and key[0] in known
    }
    stored: set[tuple[str, str]] = set()
    if wanted and dataset is not None and dataset.pk is not None:
        stored = set(
            Response.objects.filter(
                instruction__dataset=dataset,
                model_name__in={m for _, m in wanted},
                instruction__external_id__in={e for e, _ in wanted},
            ).values_list("instruction__external_id", "model_name")
        )
    for (ext, model), (file, line, field) in sorted(
        wanted.items(), key=lambda kv: (kv[1][0], kv[1][1])
    ):
        if (ext, model) not in stored:
            problems.append(
                Problem(
                    f"model {model!r} has no response to instruction {ext!r} in the "
                    "dataset; give the response text (a `response` column) to import "
                    "it with its scores",
                    line=line,
                    field=field,
                    file=file,
                )
            )
    if parsed.scores:
        key = scores_import_key(parsed)
        done = (
            dataset is not None
            and dataset.pk is not None
            and Campaign.objects.filter(
                dataset=dataset, guidelines__contains=f"{IMPORT_KEY} {key}"
            ).first()
        )
        report.raters = sorted({s.rater for s in parsed.scores})
        if done:
            report.unchanged_scores = len(parsed.scores)
            report.campaign_id = done.pk
            report.campaign = done.name
        else:
            report.human_scores = len(parsed.scores)
    return problems


def scores_write(
    dataset: Dataset,
    parsed: ParseResult,
    *,
    ids: dict[str, int],
    files: list[str],
    user,
    report: ImportReport,
) -> Campaign | None:
    """Store the planned scores (see the module doc); none when `report` counts
    them unchanged. Precondition: the caller's transaction, after the instructions
    and responses are written (`ids`: every instruction's external id -> pk).
    Freezes the rubric. Returns the campaign."""
    if not parsed.scores or not report.human_scores:
        return None
    now = timezone.now()
    key = scores_import_key(parsed)
    models = sorted({s.model_name for s in parsed.scores})
    responses = {
        (iid, model): pk
        for iid, model, pk in Response.objects.filter(
            instruction_id__in={ids[s.instruction_external_id] for s in parsed.scores},
            model_name__in=models,
        ).values_list("instruction_id", "model_name", "pk")
    }
    users = _raters(dataset, sorted({s.rater for s in parsed.scores}))
    by_response: dict[int, dict[str, list]] = defaultdict(dict)
    for score in parsed.scores:
        response = responses[(ids[score.instruction_external_id], score.model_name)]
        by_response[response].setdefault(score.rater, []).append(score)
    skills = dict(dataset.rubric.skills.values_list("key", "pk"))
    names = ", ".join(files)
    campaign = Campaign.objects.create(
        workspace_id=dataset.workspace_id,
        name=f"Imported scores: {names}"[:200],
        kind=Campaign.Kind.POINTWISE,
        dataset=dataset,
        models_included=models,
        skill_mode=Campaign.SkillMode.CHOSEN,
        overlap=max(len(r) for r in by_response.values()),
        status=Campaign.Status.CLOSED,
        closed_at=now,
        created_by=user if getattr(user, "pk", None) else None,
        guidelines=(
            f"Human scores imported from {names} on {now:%Y-%m-%d %H:%M} UTC, not "
            f"rated in this app ({IMPORT_KEY} {key})."
        ),
    )
    campaign.chosen_skills.set(
        [skills[k] for k in dict.fromkeys(s.skill_key for s in parsed.scores)]
    )
    campaign.raters.set(users.values())
    items = CampaignItem.objects.bulk_create(
        [
            CampaignItem(
                campaign=campaign,
                response_id=response,
                target=len(raters),
                submitted=len(raters),
                reserved=0,
                open_slots=0,
                position=position,
            )
            for position, (response, raters) in enumerate(by_response.items())
        ],
        batch_size=BATCH,
    )
    assignments = []
    scores_of: list[list] = []
    for item, (response, raters) in zip(items, by_response.items(), strict=True):
        for rater, rows in raters.items():
            assignments.append(
                Assignment(
                    campaign=campaign,
                    item=item,
                    response_id=response,
                    rater=users[rater],
                    status=Assignment.Status.SUBMITTED,
                    reason=f"imported from {rows[0].file}, line {rows[0].line}"[:200],
                    served_at=now,
                    expires_at=now,
                    submitted_at=now,
                    closed_at=now,
                )
            )
            scores_of.append(rows)
    Assignment.objects.bulk_create(assignments, batch_size=BATCH)
    HumanScore.objects.bulk_create(
        [
            HumanScore(
                assignment=assignment,
                skill_id=skills[s.skill_key],
                score=s.score,
                rationale=s.rationale,
            )
            for assignment, rows in zip(assignments, scores_of, strict=True)
            for s in rows
        ],
        batch_size=BATCH,
    )
    rubric_freeze(rubric_id=dataset.rubric_id)
    report.campaign_id = campaign.pk
    report.campaign = campaign.name
    return campaign


def _raters(dataset: Dataset, raters: list[str]) -> dict:
    """rater id -> the account of that imported rater, created when new."""
    User = get_user_model()
    names = {rater_username(dataset, r): r for r in raters}
    found = {u.username: u for u in User.objects.filter(username__in=names)}
    missing = [
        User(username=name, is_active=False, password=make_password(None))
        for name in names
        if name not in found
    ]
    User.objects.bulk_create(missing)
    if missing:
        found |= {u.username: u for u in User.objects.filter(username__in=names)}
    return {rater: found[name] for name, rater in names.items()}
