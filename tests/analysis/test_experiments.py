"""The judge workbench: the dev / test split and its look log, experiments, and each
run against the humans and against the baseline (analysis.selectors.experiments).

The figures are checked against the paired statistics computed straight from the
same arrays (analysis.stats.paired is checked against scikit-learn and an explicit
resampling loop in test_paired.py); the pages, API and command for every role."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from analysis.selectors.agreement import agreement_compute
from analysis.selectors.agreement.sources import AgreementError
from analysis.selectors.experiments import experiment_figures
from analysis.stats.paired import paired_comparison
from analysis.stats.scale import VALUES
from flaskapp.errors import DomainError
from judging.models import EvalSplit, EvalSplitMember, Experiment, TestSplitLook
from judging.services.experiments import experiment_add_run, experiment_create
from judging.services.splits import (
    eval_split_create,
    eval_split_look_record,
    split_assign,
)
from tests.analysis.agreement_data import add_judge_run, make_agreement_setup
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

N = 20
MODELS = ("alpha", "beta")
SKILLS = ("readability", "factuality")


def human_table():
    return {
        (i, m, s): [1 + (i + k + j) % 5, 1 + (i + j) % 5]
        for i in range(N)
        for k, m in enumerate(MODELS)
        for j, s in enumerate(SKILLS)
    }


def judge_table(shift: int):
    return {
        (i, m, s): 1 + (i + k + j + (shift if i % 3 == 0 else 0)) % 5
        for i in range(N)
        for k, m in enumerate(MODELS)
        for j, s in enumerate(SKILLS)
    }


@pytest.fixture
def researcher():
    return UserFactory(username="exp-researcher", role="researcher")


@pytest.fixture
def setup(researcher):
    difficulty = [1 + i % 3 for i in range(N)]
    return make_agreement_setup(
        researcher,
        human=human_table(),
        judges=[judge_table(0), judge_table(2)],
        n_instructions=N,
        models=MODELS,
        n_raters=2,
        name="exp",
        difficulty=difficulty,
    )


# --- the split ------------------------------------------------------------------------


def test_split_assign_is_stratified_and_seeded():
    strata = [("a",)] * 50 + [("b",)] * 30 + [("c",)] * 3
    test = split_assign(strata, 0.2, seed=4)
    assert test == split_assign(strata, 0.2, seed=4)
    assert test != split_assign(strata, 0.2, seed=5)
    assert sum(test[:50]) == 10 and sum(test[50:80]) == 6  # floor or ceil of 20%
    assert sum(test[80:]) in (0, 1)


def test_a_split_is_made_once_and_refuses_bad_fractions(setup, researcher):
    for bad in (0, 1, 1.5, -0.1, "x", None):
        with pytest.raises(DomainError) as caught:
            eval_split_create(dataset=setup.dataset, user=researcher, test_fraction=bad)
        assert caught.value.problems[0].field == "test_fraction"
    assert not EvalSplit.objects.exists()
    split = eval_split_create(
        dataset=setup.dataset, user=researcher, test_fraction=0.25, seed=3
    )
    parts = list(split.members.values_list("part", flat=True))
    assert len(parts) == N and 3 <= parts.count("test") <= 7
    assert "difficulty" in split.stratified_by
    with pytest.raises(DomainError) as caught:
        eval_split_create(dataset=setup.dataset, user=researcher, test_fraction=0.5)
    assert "fixed" in str(caught.value)
    assert EvalSplitMember.objects.count() == N


def test_a_rater_cannot_make_a_split_or_look(setup):
    rater = setup.raters[0]
    with pytest.raises(PermissionDenied):
        eval_split_create(dataset=setup.dataset, user=rater, test_fraction=0.2)
    assert not EvalSplit.objects.exists()


# --- the figures ----------------------------------------------------------------------


def arrays(setup, run, part_ids):
    """Per skill: human counts and the run's codes on the items of `part_ids`."""
    out = {}
    for skill in SKILLS:
        hc, codes = [], []
        for i in range(N):
            for m in MODELS:
                if setup.responses[(i, m)].instruction_id not in part_ids:
                    continue
                h = human_table()[(i, m, skill)]
                hc.append(np.bincount(np.array(h) - 1, minlength=5))
                codes.append(judge_table(run)[(i, m, skill)])
        out[skill] = (np.array(hc), np.array(codes))
    return out


def test_the_figures_equal_the_paired_statistics_on_the_dev_split(setup, researcher):
    split = eval_split_create(
        dataset=setup.dataset, user=researcher, test_fraction=0.3, seed=1
    )
    a, b = setup.runs
    experiment = experiment_create(
        user=researcher, dataset=setup.dataset, name="e", run_ids=[a.pk, b.pk]
    )
    got = experiment_figures(experiment=experiment, n_boot=200, seed=2)
    assert got["part"] == "dev" and got["baseline"] == a.pk
    dev = set(split.members.filter(part="dev").values_list("instruction_id", flat=True))
    base, other = arrays(setup, 0, dev), arrays(setup, 2, dev)
    by_key = {r["key"]: r for r in got["rows"]}
    assert set(by_key) == {*SKILLS, "overall"}
    run_b = next(r for r in got["runs"] if r["id"] == b.pk)
    for j, skill in enumerate(SKILLS):
        hc, ja = base[skill]
        _, jb = other[skill]
        want = paired_comparison(hc, jb, ja, VALUES, np.full(len(ja), j), 200, 2)
        vs = run_b["vs_baseline"][skill]
        assert vs["n"] == len(ja) == 2 * len(dev)
        for stat in ("qwk", "spearman", "exact"):
            assert run_b["figures"][skill][stat]["value"] == pytest.approx(
                want["a"][stat].value, abs=1e-12
            )
            assert vs["diff"][stat]["value"] == pytest.approx(
                want["diff"][stat].value, abs=1e-12
            )
            winner = {"a": "run", "b": "baseline"}.get(want["winner"][stat])
            assert vs["winner"][stat] == winner
    # The figures on a run's own items equal the dashboard's on the same slice.
    look_free = agreement_compute(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_ids=[a.pk],
        slice_dim="split",
        slice_value="dev",
        n_boot=0,
    )
    row = look_free.row("skill:readability")
    assert got["runs"][0]["figures"]["readability"]["qwk"]["value"] == pytest.approx(
        row.judge(a.pk).stat("qwk").value, abs=1e-12
    )
    # The baseline has no comparison; the ceiling is there for every row.
    assert got["runs"][0]["vs_baseline"] is None
    assert set(got["ceiling"]) == {*SKILLS, "overall"}
    assert got["runs"][0]["calls"] == 0 and got["runs"][0]["cost"] == 0.0


def test_the_test_split_is_locked_and_every_look_is_logged(setup, researcher):
    split = eval_split_create(
        dataset=setup.dataset, user=researcher, test_fraction=0.3, seed=1
    )
    experiment = experiment_create(
        user=researcher,
        dataset=setup.dataset,
        name="e",
        run_ids=[r.pk for r in setup.runs],
    )
    with pytest.raises(AgreementError, match="locked"):
        experiment_figures(experiment=experiment, part="test", n_boot=50)
    with pytest.raises(AgreementError, match="locked"):
        agreement_compute(
            dataset=setup.dataset, slice_dim="split", slice_value="test", n_boot=0
        )
    assert not TestSplitLook.objects.exists()
    look = eval_split_look_record(
        split=split,
        user=researcher,
        run_ids=[r.pk for r in setup.runs],
        experiment=experiment,
        reason="final check",
    )
    got = experiment_figures(
        experiment=experiment, part="test", test_look=look, n_boot=50
    )
    n_test = split.members.filter(part="test").count()
    assert got["runs"][1]["vs_baseline"]["readability"]["n"] == 2 * n_test
    assert got["split"]["test_looks"] == 1
    logged = TestSplitLook.objects.get()
    assert (logged.user, logged.reason, logged.run_ids) == (
        researcher,
        "final check",
        sorted(r.pk for r in setup.runs),
    )
    with pytest.raises(DomainError) as caught:
        eval_split_look_record(split=split, user=researcher, run_ids=[], reason="\x00")
    assert caught.value.problems[0].field == "reason"
    assert TestSplitLook.objects.count() == 1


def test_runs_over_different_items_are_refused(setup, researcher):
    a, _ = setup.runs
    fewer = {k: v for k, v in judge_table(1).items() if k[0] < N - 2}
    short = add_judge_run(setup.dataset, setup.responses, fewer, name="short")
    with pytest.raises(DomainError) as caught:
        experiment_create(
            user=researcher, dataset=setup.dataset, name="e", run_ids=[a.pk, short.pk]
        )
    assert caught.value.problems[0].field == "run_ids"
    assert "same items" in str(caught.value)
    assert not Experiment.objects.exists()
    experiment = experiment_create(
        user=researcher, dataset=setup.dataset, name="e", run_ids=[a.pk]
    )
    with pytest.raises(DomainError, match="same items"):
        experiment_add_run(user=researcher, experiment=experiment, run_id=short.pk)
    assert list(experiment.runs.all()) == [a]
    with pytest.raises(DomainError) as caught:
        experiment_create(
            user=researcher, dataset=setup.dataset, name="e", run_ids=[a.pk]
        )
    assert "already has an experiment" in str(caught.value)
    with pytest.raises(DomainError) as caught:
        experiment_create(
            user=researcher, dataset=setup.dataset, name="f", run_ids=[a.pk, 99999]
        )
    assert "no run 99999" in str(caught.value)


def test_without_a_split_the_figures_are_on_all_items(setup, researcher):
    experiment = experiment_create(
        user=researcher,
        dataset=setup.dataset,
        name="e",
        run_ids=[r.pk for r in setup.runs],
    )
    got = experiment_figures(experiment=experiment, n_boot=50)
    assert got["part"] == "all" and got["split"] is None
    assert got["runs"][1]["vs_baseline"]["readability"]["n"] == N * len(MODELS)
    with pytest.raises(AgreementError, match="no development / test split"):
        experiment_figures(experiment=experiment, part="dev", n_boot=50)


# --- pages, API, command ---------------------------------------------------------------


def test_the_pages_for_each_role(client, setup, researcher):
    eval_split_create(dataset=setup.dataset, user=researcher, test_fraction=0.3)
    experiment = experiment_create(
        user=researcher,
        dataset=setup.dataset,
        name="e",
        run_ids=[r.pk for r in setup.runs],
    )
    pages = [
        reverse("analysis:experiment-list"),
        reverse("analysis:experiment", args=[experiment.pk]) + "?n_boot=50",
        reverse("analysis:dataset-workbench", args=[setup.dataset.pk]),
    ]
    for url in pages:
        assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(setup.raters[0])
    for url in pages:
        assert client.get(url).status_code == 403
    assert client.post(pages[1], {"action": "test_look"}).status_code == 403
    client.force_login(researcher)
    for url in pages:
        assert client.get(url).status_code == 200
    page = client.get(pages[1]).content.decode()
    assert "Development split" in page and "Evaluate on the test split" in page
    assert "judge A" in page and "baseline" in page
    # issue 37, defect 7: an empty reason is refused naming the box; nothing logged
    empty = client.post(pages[1], {"action": "test_look", "reason": "  "})
    assert empty.status_code == 400 and not TestSplitLook.objects.exists()
    assert 'id="reason-error">Reason is empty: say why' in empty.content.decode()
    resp = client.post(pages[1], {"action": "test_look", "reason": "check"})
    assert resp.status_code == 302 and "part=test&look=" in resp["Location"]
    test_page = client.get(resp["Location"] + "&n_boot=50").content.decode()
    assert "test split" in test_page and "look" in test_page
    assert TestSplitLook.objects.count() == 1
    # A look id given by hand must be a real look of this dataset.
    bad = client.get(pages[1].split("?")[0] + "?part=test&look=99999&n_boot=50")
    assert bad.status_code == 400 and TestSplitLook.objects.count() == 1
    workbench = client.get(pages[2]).content.decode()
    assert "1 time" in workbench and "check" in workbench


def test_the_api_for_each_role(client, setup, researcher):
    a, b = setup.runs
    create = reverse("analysis_api:experiment-list")
    split = reverse("analysis_api:dataset-split", args=[setup.dataset.pk])
    body = {"dataset": setup.dataset.pk, "name": "api", "run_ids": [a.pk, b.pk]}
    assert client.post(create, body, content_type="application/json").status_code in (
        401,
        403,
    )
    client.force_login(setup.raters[0])
    assert client.post(create, body, content_type="application/json").status_code == 403
    assert (
        client.post(
            split, {"test_fraction": 0.2}, content_type="application/json"
        ).status_code
        == 403
    )
    assert not Experiment.objects.exists() and not EvalSplit.objects.exists()
    client.force_login(researcher)
    bad = client.post(split, {"test_fraction": 2}, content_type="application/json")
    assert bad.status_code == 400
    assert bad.json()["problems"][0]["field"] == "test_fraction"
    made = client.post(
        split, {"test_fraction": 0.3, "seed": 2}, content_type="application/json"
    )
    assert made.status_code == 201 and made.json()["instructions"]["test"] > 0
    resp = client.post(create, body, content_type="application/json")
    assert resp.status_code == 201
    exp_id = resp.json()["id"]
    detail = reverse("analysis_api:experiment", args=[exp_id])
    got = client.get(detail + "?n_boot=50").json()
    assert got["part"] == "dev" and len(got["runs"]) == 2
    assert client.get(detail + "?part=test").status_code == 400
    assert client.get(detail + "?n_boot=x").status_code == 400
    looks = reverse("analysis_api:experiment-test-looks", args=[exp_id])
    looked = client.post(looks, {"reason": "api"}, content_type="application/json")
    assert looked.status_code == 201 and looked.json()["part"] == "test"
    assert TestSplitLook.objects.get().reason == "api"
    client.force_login(setup.raters[0])
    assert client.get(detail).status_code == 403
    assert client.post(looks, {}, content_type="application/json").status_code == 403
    assert TestSplitLook.objects.count() == 1


def test_the_command_makes_a_split_an_experiment_and_shows_it(setup, researcher):
    out = io.StringIO()
    name = setup.dataset.name
    call_command("experiment", "split", "--dataset", name, "--test-fraction", "0.3",
                 "--user", researcher.username, stdout=out)  # fmt: skip
    assert "test instructions" in out.getvalue()
    out = io.StringIO()
    call_command("experiment", "create", "--dataset", name, "--name", "cli", "--runs",
                 *[str(r.pk) for r in setup.runs], "--user", researcher.username,
                 stdout=out)  # fmt: skip
    exp_id = out.getvalue().strip()
    out = io.StringIO()
    call_command("experiment", "show", exp_id, "--boot", "50", "--format", "json",
                 "--user", researcher.username, stdout=out)  # fmt: skip
    shown = json.loads(out.getvalue())
    assert shown["part"] == "dev" and len(shown["runs"]) == 2
    out = io.StringIO()
    call_command("experiment", "show", exp_id, "--boot", "50", "--part", "test",
                 "--reason", "cli look", "--user", researcher.username, stdout=out,
                 stderr=io.StringIO())  # fmt: skip
    assert "test split" in out.getvalue()
    assert TestSplitLook.objects.get().reason == "cli look"
    with pytest.raises(CommandError, match="test_fraction"):
        call_command("experiment", "split", "--dataset", name, "--test-fraction", "2",
                     "--user", researcher.username)  # fmt: skip


def test_judge_joins_an_experiment_or_leaves_nothing(setup, researcher):
    from judging.models import JudgeRun
    from tests.judging.data import make_config

    config = make_config(researcher)
    experiment = experiment_create(
        user=researcher,
        dataset=setup.dataset,
        name="e",
        run_ids=[r.pk for r in setup.runs],
    )
    common = ["--dataset", setup.dataset.name, "--config", config.name]
    common += ["--user", researcher.username, "--experiment", str(experiment.pk)]
    before = JudgeRun.objects.count()
    with pytest.raises(CommandError, match="same items"):
        call_command("judge", *common, "--limit", "2", stdout=io.StringIO())
    assert JudgeRun.objects.count() == before  # the refused run was removed
    out = io.StringIO()
    call_command("judge", *common, stdout=out)
    assert f"Added to experiment {experiment.pk}" in out.getvalue()
    assert experiment.runs.count() == 3


def test_exports_say_which_split_an_item_is_in(settings, setup, researcher):
    from django.db import connection

    from analysis.exports.scores import TestRows, export_chunks, score_rows

    split = eval_split_create(
        dataset=setup.dataset, user=researcher, test_fraction=0.3, seed=1
    )
    part_of = dict(split.members.values_list("instruction_id", "part"))
    # The test split's rows only when a logged look lets them in (issue 34).
    assert {r["split"] for r in score_rows(dataset=setup.dataset)} == {"dev"}
    with_test = TestRows(has_split=True, included=True)
    rows = list(score_rows(dataset=setup.dataset, test_rows=with_test))
    assert {r["split"] for r in rows} == {"dev", "test"}
    assert all(r["split"] == part_of[r["instruction_id"]] for r in rows)
    if connection.vendor == "postgresql":  # the SQL encoder writes the same bytes
        for test_rows in (with_test, TestRows(has_split=True, included=False)):
            settings.EXPORT_FAST_SQL = True
            fast = b"".join(
                export_chunks(dataset=setup.dataset, fmt="csv", test_rows=test_rows)
            )
            settings.EXPORT_FAST_SQL = False
            slow = b"".join(
                export_chunks(dataset=setup.dataset, fmt="csv", test_rows=test_rows)
            )
            # split, then expected_score, expected_mass and the taxonomy labels
            # (all empty here)
            assert fast == slow and b",dev,,,,\r\n" in fast
            assert (b",test,,,,\r\n" in fast) == test_rows.included


def test_a_run_started_from_the_experiment_joins_it(client, setup, researcher):
    from judging.models import JudgeRun
    from tests.judging.data import make_config

    config = make_config(researcher)
    experiment = experiment_create(
        user=researcher,
        dataset=setup.dataset,
        name="e",
        run_ids=[r.pk for r in setup.runs],
    )
    client.force_login(researcher)
    url = reverse("judging:run-new")
    page = client.get(url + f"?dataset={setup.dataset.pk}&experiment={experiment.pk}")
    assert 'name="experiment"' in page.content.decode()
    form = {"config": config.pk, "dataset": setup.dataset.pk, "kind": "pointwise",
            "experiment": experiment.pk}  # fmt: skip
    before = JudgeRun.objects.count()
    refused = client.post(url, {**form, "instruction_limit": 2})
    assert refused.status_code == 400 and "same items" in refused.content.decode()
    assert JudgeRun.objects.count() == before
    made = client.post(url, form)
    assert made.status_code == 302
    assert experiment.runs.count() == 3
