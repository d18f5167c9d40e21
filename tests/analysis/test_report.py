"""The report (analysis.exports.report): its files, byte-stable under a seed, the
command and the page for each role."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import zipfile

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from analysis.exports.report import (
    latex_escape,
    latex_table,
    report_files,
    report_zip,
)
from analysis.models import Job
from analysis.services.jobs import job_execute
from annotation.models import Skill
from tests.analysis.agreement_data import make_agreement_setup
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

MODELS = ("alpha", "beta")


@pytest.fixture
def setup():
    researcher = UserFactory(username="report-researcher", role="researcher")
    human = {
        (i, m, "readability"): [1 + (i + k) % 5, 1 + i % 4]
        for i in range(12)
        for k, m in enumerate(MODELS)
    }
    judge = {
        (i, m, "readability"): 1 + (2 * i + k) % 5
        for i in range(12)
        for k, m in enumerate(MODELS)
    }
    s = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=12, models=MODELS,
        n_raters=2, name="Report & co_set",
    )  # fmt: skip
    return researcher, s


def test_the_report_has_tables_charts_and_a_readme_and_is_byte_stable(setup):
    _, s = setup
    files = report_files(dataset=s.dataset, n_boot=100, seed=3)
    for name in ("README.md", "agreement/table.csv", "agreement/table.tex",
                 "agreement/models.csv", "agreement/ranks-overall.svg",
                 "agreement/ranks-overall.png", "agreement/radar-alpha.png"):  # fmt: skip
        assert name in files, name
    assert files["agreement/ranks-overall.png"].startswith(b"\x89PNG\r\n\x1a\n")
    assert "profiles/profiles.csv" in files and "profiles/overall.tex" in files
    assert "profiles/radar-humans.png" in files
    readme = files["README.md"].decode()
    assert (
        "Responses: 24" in readme and "seed 3" in readme and "100 resamples" in readme
    )
    assert f"{s.campaign.pk}: {s.campaign.name} (48 human scores)" in readme
    tex = files["agreement/table.tex"].decode()
    assert r"Report \& co\_set" in tex and r"\begin{tabular}" in tex
    again = report_files(dataset=s.dataset, n_boot=100, seed=3)
    assert again == files
    assert report_zip(files, "r") == report_zip(again, "r")
    other = report_files(dataset=s.dataset, n_boot=100, seed=4)
    assert other["agreement/table.csv"] != files["agreement/table.csv"]
    names = zipfile.ZipFile(io.BytesIO(report_zip(files, "r"))).namelist()
    assert names == sorted(f"r/{n}" for n in files)


def test_latex_escape_escapes_the_special_characters():
    assert latex_escape("a_b & 50% #1 {x} ~ ^ $ \\") == (
        r"a\_b \& 50\% \#1 \{x\} \textasciitilde{} \textasciicircum{} \$ "
        r"\textbackslash{}"
    )


def test_the_command_writes_a_folder_or_a_zip(setup, tmp_path):
    _, s = setup
    out = io.StringIO()
    call_command("report", "--dataset", s.dataset.name, "--boot", "50",
                 "--out", str(tmp_path / "r"), stdout=out)  # fmt: skip
    assert (tmp_path / "r" / "README.md").exists()
    assert (tmp_path / "r" / "agreement" / "table.tex").exists()
    call_command("report", "--dataset", s.dataset.name, "--boot", "50",
                 "--zip", str(tmp_path / "r.zip"), stdout=io.StringIO())  # fmt: skip
    first = (tmp_path / "r.zip").read_bytes()
    call_command("report", "--dataset", s.dataset.name, "--boot", "50",
                 "--zip", str(tmp_path / "r.zip"), stdout=io.StringIO())  # fmt: skip
    assert (tmp_path / "r.zip").read_bytes() == first
    with pytest.raises(CommandError, match="--dataset"):
        call_command("report", "--dataset", "nope", "--zip", str(tmp_path / "x.zip"))
    with pytest.raises(CommandError, match="--boot"):
        call_command("report", "--dataset", s.dataset.name, "--boot", "-1",
                     "--zip", str(tmp_path / "x.zip"))  # fmt: skip


def test_the_page_for_each_role(client, setup):
    researcher, s = setup
    url = reverse("analysis:dataset-report", args=[s.dataset.pk])
    assert client.get(url).status_code == 302
    client.force_login(s.raters[0])
    assert client.get(url + "?download=1").status_code == 403
    client.force_login(researcher)
    assert client.get(url).status_code == 200
    # The report is a background job (issue 34): the request answers at once with
    # the job's page; the worker's service makes the zip, then it downloads.
    resp = client.get(url + "?download=1&n_boot=50&seed=1")
    job = Job.objects.get(owner=researcher, kind="report")
    assert resp.status_code == 302 and resp["Location"] == f"/jobs/{job.pk}/"
    assert job.status == "queued" and job.params == {"n_boot": 50, "seed": 1}
    job_execute(job_id=job.pk)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Download report-Report---co_set-seed1.zip" in page
    resp = client.get(f"/jobs/{job.pk}/download/")
    assert resp.status_code == 200
    assert b"".join(resp.streaming_content) == report_zip(
        report_files(dataset=s.dataset, n_boot=50, seed=1),
        folder="report-Report---co_set-seed1",
    )
    client.force_login(s.raters[0])
    assert client.get(f"/jobs/{job.pk}/download/").status_code == 403
    client.force_login(researcher)
    assert client.get(url + "?download=1&n_boot=x").status_code == 400
    assert Job.objects.count() == 1


def test_a_preference_dataset_gets_the_meta_evaluation_figures():
    from tests.judging.pairwise_data import make_pref_setup

    dataset, _, run_a, _ = make_pref_setup("report-prefs")
    files = report_files(dataset=dataset, n_boot=50, seed=0)
    assert "metaeval/figures.csv" in files and "metaeval/figures.tex" in files
    csv = files["metaeval/figures.csv"].decode()
    assert f"{run_a.pk},#{run_a.pk} judge A,overall,accuracy_ab," in csv
    readme = files["README.md"].decode()
    assert "Agreement: left out" in readme  # no pointwise scores on this dataset
    assert report_files(dataset=dataset, n_boot=50, seed=0) == files
    assert "leaderboard/humans.csv" in files and "leaderboard/humans.tex" in files
    assert f"leaderboard/run-{run_a.pk}-ratings.png" in files


HOSTILE_NAMES = ["[2cm] model", "*starred", " [0pt] spaced", "plain"]


def _rows_start_safely(tex: str) -> bool:
    """The parser check: after a row's ``\\\\`` (spaces and newlines skipped, as
    LaTeX skips them), no ``[`` or ``*`` that LaTeX would read as its argument."""
    return re.search(r"\\\\\s*[\[*]", tex) is None


def test_latex_rows_start_safely_whatever_the_names():
    tex = latex_table(["Model", "Spearman"], [[n, "0.50"] for n in HOSTILE_NAMES], "c")
    assert _rows_start_safely(tex)
    body = tex.split(r"\hline")[2]
    assert [line.split(" & ")[0] for line in body.strip().splitlines()] == [
        "{}" + latex_escape(n) for n in HOSTILE_NAMES
    ]


def test_latex_tables_compile_with_hostile_names(tmp_path):
    engine = next(
        (e for e in ("pdflatex", "lualatex", "xelatex") if shutil.which(e)), None
    )
    if engine is None:
        pytest.skip("no TeX engine (pdflatex, lualatex, xelatex) on this machine")
    tex = latex_table(["Model", "Spearman"], [[n, "0.50"] for n in HOSTILE_NAMES], "c")
    (tmp_path / "t.tex").write_text(
        "\\documentclass{article}\\begin{document}\n" + tex + "\\end{document}\n"
    )
    done = subprocess.run(
        [engine, "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    assert "Missing number" not in done.stdout and "Illegal unit" not in done.stdout


SAFE_PART = re.compile(r"[^./\\][^/\\]*")


def test_every_file_and_zip_entry_name_is_a_safe_slug(setup, tmp_path):
    _, s = setup
    Skill.objects.filter(rubric=s.dataset.rubric).update(ability="../../evil")
    files = report_files(dataset=s.dataset, n_boot=20, seed=1)
    assert any("evil" in name for name in files)  # the hostile name is used
    names = zipfile.ZipFile(io.BytesIO(report_zip(files, "../up"))).namelist()
    for name in [*files, *names]:
        parts = name.split("/")
        assert all(SAFE_PART.fullmatch(p) for p in parts), name
        assert ".." not in parts and not name.startswith("/"), name
    assert all(n.startswith("up/") for n in names)
