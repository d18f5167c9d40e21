"""The import preview shows every column the import reads, the reference answer and
the task too, and names the rubric it imports with, not "rubric_id 2" (issue 37,
defect 24)."""

from __future__ import annotations

import json

import pytest
from bs4 import BeautifulSoup
from django.urls import reverse

from annotation.models import Rubric
from annotation.services.import_jobs import import_job_create
from annotation.services.rubrics import rubric_get_default

pytestmark = pytest.mark.django_db

ROWS = [
    {
        "id": "q1",
        "instruction": "Why is the sky blue?",
        "reference": "Rayleigh scattering of sunlight.",
        "task": "support-answers",
        "model": "m-a",
        "response": "Because of scattering.",
    }
]


def _page(client, job) -> BeautifulSoup:
    page = client.get(reverse("annotation:import-detail", args=[job.pk]))
    assert page.status_code == 200
    return BeautifulSoup(page.content, "html.parser")


def test_generic_rows_preview_reference_and_task_and_the_rubric_by_name(
    client_for, researcher
):
    rubric = rubric_get_default()
    job = import_job_create(
        dataset_name="support",
        fmt="jsonl",
        uploads=[("rows.jsonl", "\n".join(json.dumps(r) for r in ROWS).encode())],
        options={"rubric_id": rubric.pk},
        user=researcher,
    )
    assert job.status == "validated", job.problems
    soup = _page(client_for(researcher), job)
    table = soup.find(id="import-preview")
    headers = [th.get_text() for th in table.find_all("th")]
    assert {"reference", "task"} <= set(headers)
    cells = [td.get_text() for td in table.find_all("td")]
    assert "Rayleigh scattering of sunlight." in cells
    assert "support-answers" in cells
    options = {
        tr.th.get_text(): tr.td for tr in soup.select("table.kv tr") if tr.th and tr.td
    }
    assert options["Rubric"].get_text() == str(Rubric.objects.get(pk=rubric.pk))
    assert options["Rubric"].a["href"] == reverse(
        "annotation:rubric-detail", args=[rubric.pk]
    )
    assert "rubric_id" not in soup.get_text()
