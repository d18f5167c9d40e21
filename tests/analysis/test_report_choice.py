"""The report's categorical criteria (issue 37, defect 1) and its choices: a yes/no
criterion gets its figures and files (exact agreement, kappa, F1 with the human
majority, as the dashboard shows); what is left out, by choice or because it cannot
be computed, is named in the README with the reason; the page lists the parts,
campaigns, runs and criteria with checkboxes and starts the job with the ticked ones."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from analysis.exports.report import report_files
from analysis.models import Job
from tests.analysis.classification_data import (
    MIXED_RUBRIC,
    categorical_rubric,
    make_classification_setup,
)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

MODELS = ("alpha", "beta")


def _mixed(researcher, *, judge_labels: bool = True, name: str = "mixed-report"):
    """Mixed checks: yes/no `consistent` and 0-4 `helpfulness`, 6 instructions x 2
    models, 3 raters; one judge run (labels on `consistent` only if asked)."""
    human, judge = {}, {}
    for i in range(6):
        for k, m in enumerate(MODELS):
            yes = (i + k) % 3 != 0
            human[(i, m, "consistent")] = ["yes" if yes else "no"] * 2 + ["yes"]
            human[(i, m, "helpfulness")] = [(i + k) % 5, (i + 2 * k) % 5, i % 5]
            judge[(i, m, "helpfulness")] = (i + k + 1) % 5
            if judge_labels:
                judge[(i, m, "consistent")] = "yes" if (i + k) % 2 else "no"
    return make_classification_setup(
        researcher, human=human, judges=[judge], n_instructions=6, models=MODELS,
        name=name, rubric=categorical_rubric(MIXED_RUBRIC, name=name),
    )  # fmt: skip


@pytest.fixture
def mixed(researcher):
    return _mixed(researcher)


def test_a_categorical_criterion_has_its_figures_and_files(mixed):
    files = report_files(dataset=mixed.dataset, n_boot=20, seed=1)
    assert "agreement/categorical.csv" in files
    assert "agreement/categorical.tex" in files
    rows = list(
        csv.DictReader(io.StringIO(files["agreement/categorical.csv"].decode()))
    )
    run_label = next(r["source"] for r in rows if r["source"] != "raters")
    figures = {(r["source"], r["figure"], r["label"]) for r in rows}
    assert all(r["criterion"] == "consistent" for r in rows)
    for figure in ("accuracy", "kappa", "alpha_with_judge", "macro_f1"):
        assert (run_label, figure, "") in figures
    assert (run_label, "f1", "yes") in figures and (run_label, "f1", "no") in figures
    assert ("raters", "fleiss_kappa", "") in figures
    accuracy = next(
        r for r in rows if r["source"] == run_label and r["figure"] == "accuracy"
    )
    assert accuracy["n"] == "12" and 0 <= float(accuracy["value"]) <= 1
    tex = files["agreement/categorical.tex"].decode()
    assert "Consistent with the source" in tex and "Cohen's kappa" in tex
    readme = files["README.md"].decode()
    assert "Categorical criteria (agreement/categorical.*)" in readme
    assert "Categorical" not in readme.split("## Left out", 1)[1]


def test_a_categorical_criterion_without_judge_labels_is_listed_as_left_out(
    researcher,
):
    s = _mixed(researcher, judge_labels=False, name="mixed-nolabels")
    readme = report_files(dataset=s.dataset, n_boot=0, seed=0)["README.md"].decode()
    left_out = readme.split("## Left out", 1)[1]
    assert (
        "Categorical criterion Consistent with the source: no judge figures "
        "(no judge run labelled it)." in left_out
    )


def test_parts_not_chosen_are_left_out_by_choice(mixed):
    files = report_files(
        dataset=mixed.dataset, n_boot=0, seed=0, parts=["agreement", "categorical"]
    )
    assert "agreement/table.csv" in files and "agreement/categorical.csv" in files
    assert not any(p.startswith(("profiles/", "leaderboard/")) for p in files)
    left_out = files["README.md"].decode().split("## Left out", 1)[1]
    assert "Skill profiles: each model's mean per criterion: left out by choice." in (
        left_out
    )
    only = report_files(dataset=mixed.dataset, n_boot=0, seed=0, parts=["profiles"])
    assert "agreement/categorical.csv" not in only
    assert "agreement/table.csv" not in only
    assert "Categorical criteria: exact agreement" in only["README.md"].decode()


def test_the_page_lists_what_the_zip_holds_and_starts_the_chosen_parts(
    client_for, researcher, mixed
):
    client = client_for(researcher)
    url = reverse("analysis:dataset-report", args=[mixed.dataset.pk])
    page = client.get(url).content.decode()
    for key in ("agreement", "categorical", "profiles", "leaderboard", "metaeval"):
        assert f'name="part" value="{key}" checked' in page
    assert f'name="campaign" value="{mixed.campaign.pk}" checked' in page
    assert f'name="run" value="{mixed.runs[0].pk}" checked' in page
    assert "Consistent with the source" in page and "Cohen's kappa" in page
    resp = client.get(
        url,
        {"download": 1, "choose": 1, "n_boot": 10, "seed": 2,
         "part": ["categorical", "agreement"], "run": [mixed.runs[0].pk]},
    )  # fmt: skip
    job = Job.objects.get(owner=researcher, kind="report")
    assert resp.status_code == 302 and resp["Location"] == f"/jobs/{job.pk}/"
    assert job.params == {
        "n_boot": 10, "seed": 2, "parts": ["agreement", "categorical"],
        "run_ids": [mixed.runs[0].pk],
    }  # fmt: skip


def test_the_page_refuses_no_part_and_another_datasets_campaign(
    client_for, researcher, mixed
):
    client = client_for(researcher)
    url = reverse("analysis:dataset-report", args=[mixed.dataset.pk])
    resp = client.get(url, {"download": 1, "choose": 1})
    assert resp.status_code == 400
    assert "tick at least one part" in resp.content.decode()
    other = _mixed(UserFactory(username="other-res", role="researcher"), name="other")
    resp = client.get(
        url, {"download": 1, "choose": 1, "part": "agreement",
              "campaign": other.campaign.pk},
    )  # fmt: skip
    assert resp.status_code == 400
    assert "`campaign`" in resp.content.decode()
    assert 'name="part" value="agreement" checked' in resp.content.decode()
    assert not Job.objects.exists()
