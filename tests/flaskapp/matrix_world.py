"""The access matrix's world (tests/flaskapp/test_access_matrix.py): two workspaces,
each with one of everything a URL can name, built with the services and factories.

Every name made here starts with the workspace's marker (``alpha`` for A, ``bravo``
for B), so a page or API answer that shows another workspace's object is caught by
looking for the marker in its body.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import Group, User

from analysis.jobs import JOB_KINDS
from analysis.models import Job
from annotation.models import Campaign, Dataset, Instruction, Response
from annotation.services.gold import gold_set
from annotation.services.import_jobs import import_job_create
from annotation.services.pairwise import pairwise_next
from annotation.services.rating import assignment_next, rating_submit
from annotation.services.rubrics import rubric_import
from flaskapp.models import Membership, Workspace
from flaskapp.people.services.invites import invite_create
from judging.models import JudgeCall, JudgeRun, MetadataSuggestion, PromptTemplate
from judging.services.experiments import experiment_create
from judging.services.keys import stored_key_create
from judging.services.prompts import prompt_get_builtin, prompt_template_create
from judging.services.sampling import sampling_campaign_start
from judging.services.splits import eval_split_create
from judging.services.tags import criterion_note_add
from tests.factories import (
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    campaign_from_fields,
)
from tests.judging.data import add_calls, make_config, make_run

MODELS = ("model-x", "model-y")
SKILL_KEY = "factuality"


@dataclass
class Side:
    """One workspace and its members and objects."""

    workspace: Workspace
    marker: str
    users: dict[str, User] = field(default_factory=dict)
    objects: dict[str, object] = field(default_factory=dict)


def _member(workspace, username, role, *, group=None) -> User:
    user = UserFactory(username=username)
    if group:
        # A campaign's raters are plain rater accounts (`roles.plain_rater_problem`).
        user.groups.add(Group.objects.get(name=group))
    Membership.objects.create(workspace=workspace, user=user, role=role)
    return user


def _rubric(workspace, marker):
    data = json.dumps(
        {
            "name": f"{marker}-rubric",
            "criteria": [
                {
                    "key": key,
                    "name": key.capitalize(),
                    "scale": {"min": 1, "max": 5},
                    "anchors": {"1": "Poor.", "5": "Excellent."},
                }
                for key in ("comprehension", "factuality", "readability")
            ],
        }
    ).encode()
    return rubric_import(data=data, file="rubric.json", workspace=workspace)


def build_side(marker: str, slug: str) -> Side:
    """A workspace named by `marker` with an owner, a researcher, a reviewer and a
    rater, and a dataset with campaigns (pointwise, pairwise), ratings, gold, a
    judge config, runs (pointwise with calls, metadata with a suggestion), a prompt
    template with a criterion note, an experiment, a split, an import job, an
    analysis job, a stored judge API key and an invite link (its token kept in
    `objects["invite_token"]`: only its hash is stored)."""
    workspace = Workspace.objects.create(name=f"{marker} lab", slug=slug)
    side = Side(workspace=workspace, marker=marker)
    users = side.users
    for role in ("owner", "researcher", "reviewer"):
        users[role] = _member(workspace, f"{marker}-{role}", role)
    users["rater"] = _member(workspace, f"{marker}-rater", "rater", group="rater")
    owner = users["owner"]

    rubric = _rubric(workspace, marker)
    dataset = Dataset.objects.create(
        workspace=workspace,
        name=f"{marker}-set",
        rubric=Dataset._meta.get_field("rubric").related_model.objects.get(
            is_builtin=True
        ),
    )
    for i in range(3):
        instruction = InstructionFactory(
            dataset=dataset,
            external_id=str(i + 1),
            text=f"{marker} question {i + 1}: explain something.",
            position=i,
        )
        for model in MODELS:
            ResponseFactory(
                instruction=instruction,
                model_name=model,
                text=f"{marker} {model} answers {i + 1}.",
            )
    responses = list(
        Response.objects.filter(instruction__dataset=dataset).order_by("pk")
    )
    gold = gold_set(
        dataset=dataset,
        response_id=responses[-1].pk,
        scores={SKILL_KEY: 4},
        user=owner,
    )
    campaign = campaign_from_fields(
        created_by=owner,
        name=f"{marker}-campaign",
        dataset=dataset,
        overlap=1,
        raters=[users["rater"]],
    )
    pair_campaign = campaign_from_fields(
        created_by=owner,
        name=f"{marker}-pairs",
        dataset=dataset,
        raters=[users["rater"]],
        pairwise=True,
    )
    served = assignment_next(campaign=campaign, rater=users["rater"]).assignment
    skills = [s.key for s in served.response.instruction.skills.all()]
    rating_submit(
        assignment_id=served.pk,
        rater=users["rater"],
        scores={key: 3 for key in skills},
    )
    pair_assignment = pairwise_next(
        campaign=pair_campaign, rater=users["rater"]
    ).assignment

    config = make_config(owner, name=f"{marker}-judge")
    config.workspace = workspace
    config.save(update_fields=["workspace"])
    run = make_run(
        dataset=dataset,
        config=config,
        status=JudgeRun.Status.COMPLETED,
        name=f"{marker}-run",
        workspace=workspace,
        created_by=owner,
    )
    add_calls(run, [JudgeCall.Status.SUCCEEDED] * len(responses))
    metadata_run = make_run(
        dataset=dataset,
        config=config,
        status=JudgeRun.Status.COMPLETED,
        kind=JudgeRun.Kind.METADATA,
        name=f"{marker}-metadata-run",
        workspace=workspace,
        created_by=owner,
    )
    instruction = Instruction.objects.filter(dataset=dataset).order_by("pk").first()
    suggestion = MetadataSuggestion.objects.create(
        run=metadata_run, instruction=instruction, difficulty=4
    )
    builtin = prompt_get_builtin(PromptTemplate.Kind.POINTWISE)
    prompt = prompt_template_create(
        user=owner,
        name=f"{marker}-prompt",
        kind=PromptTemplate.Kind.POINTWISE,
        system_text=builtin.system_text,
        user_text=builtin.user_text,
        workspace=workspace,
    )
    criterion_note_add(
        user=owner,
        prompt=prompt,
        skill_key=SKILL_KEY,
        text=f"{marker} note",
        dataset=dataset,
    )
    experiment = experiment_create(
        user=owner, dataset=dataset, name=f"{marker}-experiment", run_ids=[run.pk]
    )
    split = eval_split_create(dataset=dataset, user=owner, test_fraction=0.34)
    flask_row = json.dumps(
        {
            "idx": 1,
            "instruction": f"{marker} imported question",
            "answer": "Yes.",
            "domain": ["math"],
            "difficulty": 2,
            "task": "t",
            "skills": ["comprehension", "factuality", "readability"],
        }
    ).encode()
    import_job = import_job_create(
        dataset_name=f"{marker}-imported",
        fmt="flask",
        uploads=[("e.jsonl", flask_row + b"\n")],
        user=owner,
        workspace=workspace,
    )
    job = Job.objects.create(
        workspace=workspace,
        kind="report",
        owner=owner,
        dataset=dataset,
        params=JOB_KINDS["report"].check({"n_boot": 0, "seed": 0}),
        status=Job.Status.DONE,
    )
    # A finished report job with its file, so its download is served.
    folder = Path(settings.MEDIA_ROOT) / "jobs" / str(job.pk)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    job.result_file = f"jobs/{job.pk}/report.zip"
    job.result_name = f"{marker}-report.zip"
    job.save(update_fields=["result_file", "result_name"])
    sampling_campaign = sampling_campaign_start(
        user=owner,
        name=f"{marker}-sampled",
        dataset=dataset,
        run_id=run.pk,
        budget=2,
        # add_calls scores the rubric's first criterion.
        skill=dataset.rubric.skills.order_by("pk").first().key,
    )
    key = stored_key_create(
        user=owner,
        workspace=workspace,
        name=f"{marker}-key",
        value=f"sk-{marker}-0123456789",
        allowed_hosts=["api.example.com"],
    )
    # A rater's link: whoever follows it joins as a rater (rolled back per case).
    invite = invite_create(
        actor=owner, workspace=workspace, role="rater", expires_in=7, max_uses=5
    )
    side.objects.update(
        key=key,
        invite=invite.invite,
        invite_token=invite.token,
        rubric=rubric,
        dataset=dataset,
        instruction=instruction,
        response=served.response,
        gold_response=gold.response,
        campaign=campaign,
        pair_campaign=pair_campaign,
        sampling_campaign=sampling_campaign,
        assignment=served,
        pair_assignment=pair_assignment,
        config=config,
        run=run,
        metadata_run=metadata_run,
        suggestion=suggestion,
        prompt=prompt,
        experiment=experiment,
        split=split,
        import_job=import_job,
        job=job,
    )
    assert Campaign.objects.filter(workspace=workspace).count() == 3
    return side
