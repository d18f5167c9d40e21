"""One default rule for the agreement page, API and command: every pointwise campaign
and, per judge, its latest finished run with scores (`agreement_defaults`)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis.selectors.agreement import agreement_compute, agreement_defaults
from judging.models import JudgeConfig, JudgeRun
from tests.analysis.agreement_data import add_judge_run, make_agreement_setup

pytestmark = pytest.mark.django_db


def tables():
    human, judge = {}, {}
    for i in range(6):
        for m in ("alpha", "beta"):
            for key in ("readability", "factuality"):
                base = 1 + (i + (m == "beta")) % 5
                human[(i, m, key)] = [base, min(5, base + i % 2), "-"]
                judge[(i, m, key)] = min(5, base + (i % 3 == 0))
    return human, judge


@pytest.fixture
def setup(researcher):
    """One config with an old and a newer finished run, a newer running run and a
    finished run without scores; an import ("judge A") known by its name."""
    human, judge = tables()
    s = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=6, name="dflt-set"
    )
    config = JudgeConfig.objects.create(name="dflt judge")
    s.old = add_judge_run(s.dataset, s.responses, judge, name="old")
    s.new = add_judge_run(
        s.dataset, s.responses, {k: 5 - v // 2 for k, v in judge.items()}, name="new"
    )
    s.running = add_judge_run(s.dataset, s.responses, judge, name="running")
    s.unscored = add_judge_run(s.dataset, s.responses, {}, name="unscored")
    for run in (s.old, s.new, s.running, s.unscored):
        run.config = config
    s.running.status = JudgeRun.Status.RUNNING
    JudgeRun.objects.bulk_update([s.old, s.new, s.running, s.unscored], ["config"])
    s.running.save(update_fields=["status"])
    # an older re-import of judge A: the newer one (setup.runs[0]) is the default
    s.import_old = add_judge_run(s.dataset, s.responses, judge, name="judge A")
    JudgeRun.objects.filter(pk=s.import_old.pk).update(
        created_at=s.runs[0].created_at.replace(year=2000)
    )
    return s


def defaults_of(s):
    return sorted([s.runs[0].pk, s.new.pk])


def test_defaults_are_every_pointwise_campaign_and_the_latest_run_per_judge(setup):
    d = agreement_defaults(dataset=setup.dataset)
    assert d.campaign_ids == [setup.campaign.pk]
    assert d.run_ids == defaults_of(setup)
    # the reference run is never a default
    d = agreement_defaults(dataset=setup.dataset, exclude_run_id=setup.new.pk)
    assert d.run_ids == sorted([setup.runs[0].pk, setup.old.pk])


def test_compute_without_sources_uses_the_defaults(setup):
    got = agreement_compute(dataset=setup.dataset, n_boot=20)
    want = agreement_compute(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_ids=defaults_of(setup),
        n_boot=20,
    )
    assert [r.id for r in got.runs] == defaults_of(setup)
    assert [c.id for c in got.campaigns] == [setup.campaign.pk]
    assert got.defaults.runs and got.defaults.campaigns
    assert not want.defaults.runs and not want.defaults.campaigns
    assert got.rows == want.rows


def api_url(s, **query) -> str:
    base = reverse("analysis_api:agreement", args=[s.dataset.pk])
    return base + "".join(
        f"{'?' if i == 0 else '&'}{k}={v}" for i, (k, v) in enumerate(query.items())
    )


def test_api_without_parameters_answers_with_the_defaults(
    setup, researcher, api_client_for
):
    resp = api_client_for(researcher).get(api_url(setup, n_boot=20))
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert [r["id"] for r in body["runs"]] == defaults_of(setup)
    assert body["defaults"]["runs"] is True
    want = agreement_compute(dataset=setup.dataset, n_boot=20)
    assert body == json.loads(json.dumps(want.to_dict()))


def test_api_without_parameters_is_refused_to_raters_and_anonymous(
    setup, rater, api_client_for
):
    assert api_client_for(rater).get(api_url(setup)).status_code == 403
    assert api_client_for(None).get(api_url(setup)).status_code == 401


def test_api_names_the_run_when_no_default_exists(researcher, api_client_for):
    human, _ = tables()
    s = make_agreement_setup(
        researcher, human=human, judges=[], n_instructions=6, name="no-runs"
    )
    resp = api_client_for(researcher).get(api_url(s))
    assert resp.status_code == 400
    assert resp.json()["problems"][0]["field"] == "run"


def test_page_without_parameters_shows_the_defaults_ticked(
    setup, researcher, client_for
):
    url = reverse("analysis:agreement", args=[setup.dataset.pk])
    resp = client_for(researcher).get(url, {"n_boot": 20})
    html = resp.content.decode()
    assert resp.status_code == 200
    assert 'id="agreement-compact"' in html and "Showing the defaults" in html
    for run in (setup.runs[0], setup.new):
        assert f'name="run" value="{run.pk}" checked' in html
    for run in (setup.old, setup.import_old):
        assert f'name="run" value="{run.pk}">' in html  # offered, not ticked
    assert f'name="campaign" value="{setup.campaign.pk}" checked' in html


def test_page_without_any_run_says_why_nothing_is_shown(researcher, client_for):
    human, _ = tables()
    s = make_agreement_setup(
        researcher, human=human, judges=[], n_instructions=6, name="no-runs-page"
    )
    resp = client_for(researcher).get(
        reverse("analysis:agreement", args=[s.dataset.pk])
    )
    html = resp.content.decode()
    assert resp.status_code == 200
    assert "Nothing to show by default" in html and "no finished run" in html
    assert "Nothing was computed" not in html


def test_radar_svg_and_csv_without_sources_use_the_defaults(
    setup, researcher, client_for
):
    c = client_for(researcher)
    radar = c.get(
        reverse("analysis:agreement-chart", args=[setup.dataset.pk, "radar"]),
        {"model": "alpha", "n_boot": 0},
    )
    assert radar.status_code == 200, radar.content[:200]
    assert radar["Content-Type"].startswith("image/svg+xml")
    csv = c.get(
        reverse("analysis:agreement-csv", args=[setup.dataset.pk, "table"]),
        {"n_boot": 0},
    ).content.decode()
    assert f"run:{setup.new.pk}" in csv and f"run:{setup.old.pk}" not in csv


def run_cmd(*args) -> str:
    out = io.StringIO()
    call_command("agreement", *args, stdout=out)
    return out.getvalue()


def test_command_without_runs_uses_the_same_defaults(setup):
    got = json.loads(
        run_cmd("--dataset", "dflt-set", "--format", "json", "--boot", "20")
    )
    assert [r["id"] for r in got["runs"]] == defaults_of(setup)
    assert got == json.loads(
        json.dumps(agreement_compute(dataset=setup.dataset, n_boot=20).to_dict())
    )
    table = run_cmd("--dataset", "dflt-set", "--boot", "0")
    assert "defaults:" in table and f"#{setup.new.pk} new" in table
    assert f"#{setup.old.pk} old" not in table


def test_command_without_a_default_run_names_the_option(researcher):
    human, _ = tables()
    make_agreement_setup(
        researcher, human=human, judges=[], n_instructions=6, name="no-runs-cmd"
    )
    with pytest.raises(CommandError) as exc:
        run_cmd("--dataset", "no-runs-cmd")
    assert str(exc.value).startswith("--run")


def test_drilldown_without_parameters_uses_the_defaults(setup, researcher, client_for):
    url = reverse("analysis:agreement-skill", args=[setup.dataset.pk, "factuality"])
    resp = client_for(researcher).get(url, {"n_boot": 0})
    html = resp.content.decode()
    assert resp.status_code == 200, html[:300]
    assert min(defaults_of(setup)) == setup.runs[0].pk  # the first compared run
    assert "judge A says" in html and "old says" not in html
