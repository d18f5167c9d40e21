"""Rubrics other than FLASK's, for the rating tests (service, API, views, browser):
a 0-4 five-attribute rubric (HelpSteer-style), a 1-10 single criterion (MT-Bench
style, no N/A) and a yes/no classification question. Built with the rubric import
service, as a researcher would."""

from __future__ import annotations

import json

from annotation.services.rubrics import rubric_import
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    campaign_from_fields,
)

HELPSTEER = {
    "name": "HelpSteer 0-4",
    "groups": [
        {"key": "quality", "name": "Quality"},
        {"key": "style", "name": "Style"},
    ],
    "criteria": [
        {
            "key": key,
            "name": key.capitalize(),
            "group": group,
            "scale": {"min": 0, "max": 4},
            "anchors": {"0": f"No {key}.", "2": f"Some {key}.", "4": f"Full {key}."},
        }
        for key, group in [
            ("helpfulness", "quality"),
            ("correctness", "quality"),
            ("coherence", "style"),
            ("complexity", "style"),
            ("verbosity", "style"),
        ]
    ],
}

TEN_POINT = {
    "name": "Overall 1-10",
    "criteria": [
        {
            "key": "overall",
            "name": "Overall quality",
            "scale": {"min": 1, "max": 10},
            "anchors": {"1": "Useless.", "10": "Could not be better."},
            "allow_na": False,
        }
    ],
}

YES_NO = {
    "name": "Consistency yes/no",
    "criteria": [
        {
            "key": "consistent",
            "name": "Consistent with the source",
            "kind": "categorical",
            "labels": [
                {"key": "yes", "name": "Yes", "description": "Nothing contradicts it."},
                {"key": "no", "name": "No", "description": "Something contradicts it."},
            ],
            "allow_na": False,
        }
    ],
}


def rubric_from(spec: dict):
    return rubric_import(data=json.dumps(spec).encode(), file="rubric.json")


def dataset_on(spec: dict, *, n_instructions: int = 3, models=("m-a", "m-b")):
    """A dataset rated on the rubric `spec`, one response per model and instruction."""
    dataset = DatasetFactory(rubric=rubric_from(spec))
    for _ in range(n_instructions):
        # No skill links: every response is rated on the rubric's criteria.
        instruction = InstructionFactory(dataset=dataset, skill_keys=[])
        for model in models:
            ResponseFactory(instruction=instruction, model_name=model)
    return dataset


def campaign_on(spec: dict, *, user, raters, **options):
    """A pointwise campaign over `dataset_on(spec)`."""
    return campaign_from_fields(
        name=f"{spec['name']} campaign",
        dataset=dataset_on(spec),
        created_by=user,
        raters=list(raters),
        **options,
    )
