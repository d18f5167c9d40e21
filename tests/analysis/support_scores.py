"""The customer-support tickets (tests/annotation/support_data.py) imported with
their own taxonomy, rated by three raters (one of them a synthetic account) and
scored by one judge: what the taxonomy and Hugging Face tests slice and export."""

from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth.models import Group

from annotation.models import Campaign, Dataset, Response
from annotation.services.campaign_spec import CampaignSpec, ServingPolicy
from annotation.services.campaigns import campaign_create
from annotation.services.imports import dataset_import_files
from flaskapp import roles
from tests.analysis.agreement_data import add_human_scores, add_judge_run
from tests.annotation.support_data import TAXONOMY, TICKETS, support_rows
from tests.factories import UserFactory

SKILLS = ("readability", "comprehension")


def support_with_scores(researcher, tmp_path: Path, name: str = "support"):
    """(dataset, campaign, run); the third rater is synthetic."""
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in support_rows()))
    dataset_import_files(
        dataset_name=name,
        fmt="jsonl",
        files=[(path.name, path)],
        options={"taxonomy": TAXONOMY, "facets": ["language"]},
    )
    dataset = Dataset.objects.get(name=name)
    ids = [t[0] for t in TICKETS]
    responses = {
        (ids.index(r.instruction.external_id), r.model_name): r
        for r in Response.objects.filter(instruction__dataset=dataset).select_related(
            "instruction"
        )
    }
    raters = [UserFactory(username=f"{name}-rater-{k}", role="rater") for k in range(3)]
    raters[2].groups.add(Group.objects.get_or_create(name=roles.SYNTHETIC)[0])
    campaign = campaign_create(
        spec=CampaignSpec(
            name=f"{name} campaign",
            dataset=dataset,
            skill_mode=Campaign.SkillMode.ALL,
            raters=raters,
            serving=ServingPolicy(overlap=3),
        ),
        created_by=researcher,
    )
    human, judge = {}, {}
    for i, m in responses:
        for key in SKILLS:
            base = 1 + (i + (m == "helper-b") * 2) % 5
            human[(i, m, key)] = [base, min(5, base + i % 2), base]
            judge[(i, m, key)] = min(5, base + (i % 3 == 0))
    add_human_scores(campaign, responses, human, raters)
    run = add_judge_run(dataset, responses, judge)
    return dataset, campaign, run
