"""`manage.py agreement` and the agreement API: same numbers, permissions, errors."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis.selectors.agreement import agreement_compute
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(researcher):
    human, judge = {}, {}
    for i in range(6):
        for m in ("alpha", "beta"):
            for key in ("readability", "factuality"):
                base = 1 + (i + (m == "beta")) % 5
                human[(i, m, key)] = [base, min(5, base + i % 2), "-"]
                judge[(i, m, key)] = min(5, base + (i % 3 == 0))
    return make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=6, name="api-set"
    )


def run_cmd(*args) -> str:
    out = io.StringIO()
    call_command("agreement", *args, stdout=out)
    return out.getvalue()


def test_command_json_equals_the_selector(setup):
    out = run_cmd("--dataset", "api-set", "--format", "json", "--boot", "50")
    got = json.loads(out)
    want = agreement_compute(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_ids=[setup.runs[0].pk],
        n_boot=50,
    )
    assert got["rows"] == json.loads(json.dumps(want.to_dict()["rows"]))
    assert got["runs"][0]["id"] == setup.runs[0].pk  # defaults: every run, campaign
    assert got["defaults"]["runs"] and got["defaults"]["campaigns"]


def test_command_table_lists_every_skill_and_marks_undefined(setup):
    out = run_cmd("--dataset", "api-set", "--boot", "20", "--slice", "model=alpha")
    assert "Readability" in out and "Factuality" in out and "OVERALL" in out
    assert "model alpha" in out
    assert "Spearman" in out and "QWK" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--dataset", "nope"], "--dataset"),
        (["--dataset", "api-set", "--slice", "difficulty"], "--slice"),
        (["--dataset", "api-set", "--slice", "colour=red"], "--slice"),
        (["--dataset", "api-set", "--run", "99999"], "--run"),
        (["--dataset", "api-set", "--boot", "-3"], "--boot"),
    ],
)
def test_command_errors_name_the_option(setup, args, message):
    with pytest.raises(CommandError) as exc:
        run_cmd(*args)
    assert str(exc.value).startswith(message)


def url(name, setup, **query):
    base = reverse(f"analysis_api:{name}", args=[setup.dataset.pk])
    parts = []
    for k, v in query.items():
        for item in v if isinstance(v, list) else [v]:
            parts.append(f"{k}={item}")
    return base + ("?" + "&".join(parts) if parts else "")


def test_api_returns_the_same_numbers(setup, researcher, api_client_for):
    client = api_client_for(researcher)
    resp = client.get(
        url(
            "agreement",
            setup,
            campaign=setup.campaign.pk,
            run=setup.runs[0].pk,
            n_boot=30,
            slice="difficulty:3",
        )
    )
    assert resp.status_code == 200, resp.content
    want = agreement_compute(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_ids=[setup.runs[0].pk],
        n_boot=30,
        slice_dim="difficulty",
        slice_value="3",
    )
    assert resp.json() == json.loads(json.dumps(want.to_dict()))

    resp = client.get(url("agreement-sources", setup))
    assert [c["id"] for c in resp.json()["campaigns"]] == [setup.campaign.pk]
    resp = client.get(url("agreement-slices", setup))
    assert [v["value"] for v in resp.json()["model"]] == ["alpha", "beta"]
    resp = client.get(
        url(
            "agreement-disagreements",
            setup,
            campaign=setup.campaign.pk,
            run=setup.runs[0].pk,
            skill="readability",
            limit=3,
        )
    )
    assert resp.status_code == 200
    assert len(resp.json()["items"]) == 3


@pytest.mark.parametrize(
    "query, field",
    [
        ({"run": "x"}, "run"),
        ({"n_boot": "lots"}, "n_boot"),
        ({"n_boot": "-1"}, "n_boot"),
        ({"slice": "colour:red"}, "slice"),
        ({"slice": "difficulty:9"}, "slice_value"),
        ({"run": "99999"}, "run"),
        ({"campaign": "99999"}, "campaign"),
    ],
)
def test_api_bad_parameters_name_the_field(
    setup, researcher, api_client_for, query, field
):
    query = {"campaign": setup.campaign.pk, "run": setup.runs[0].pk, **query}
    resp = api_client_for(researcher).get(url("agreement", setup, **query))
    assert resp.status_code == 400
    assert resp.json()["problems"][0]["field"] == field


def test_disagreements_and_probes_take_the_default_run_when_none_is_given(
    setup, researcher, api_client_for
):
    """One rule for defaults: without `run` (and `campaign`) the endpoints about one
    run use the first default run and every pointwise campaign, as the drill-down."""
    client = api_client_for(researcher)
    given = {"campaign": setup.campaign.pk, "run": setup.runs[0].pk}
    for name, extra in (
        ("agreement-disagreements", {"skill": "readability", "limit": 5}),
        ("pointwise-probes", {"n_boot": 20}),
    ):
        explicit = client.get(url(name, setup, **given, **extra))
        defaulted = client.get(url(name, setup, **extra))
        assert explicit.status_code == defaulted.status_code == 200, name
        assert defaulted.json() == explicit.json(), name


def test_disagreements_and_probes_take_one_run_not_several(
    setup, researcher, api_client_for
):
    other = make_agreement_setup(
        researcher,
        human={(0, "alpha", "readability"): [3, 3, "-"]},
        judges=[{(0, "alpha", "readability"): 3}],
        n_instructions=1,
        name="api-other",
    )
    for name in ("agreement-disagreements", "pointwise-probes"):
        resp = api_client_for(researcher).get(
            url(
                name,
                setup,
                campaign=setup.campaign.pk,
                run=[setup.runs[0].pk, other.runs[0].pk],
                skill="readability",
            )
        )
        assert resp.status_code == 400, name
        assert resp.json()["problems"][0]["field"] == "run"


@pytest.mark.parametrize(
    "name",
    ["agreement", "agreement-sources", "agreement-slices", "agreement-disagreements"],
)
def test_raters_and_anonymous_are_refused(setup, rater, api_client_for, name):
    target = url(name, setup, campaign=setup.campaign.pk, run=setup.runs[0].pk)
    assert api_client_for(rater).get(target).status_code == 403
    assert api_client_for(setup.raters[0]).get(target).status_code == 403
    assert api_client_for(None).get(target).status_code == 401


def test_admin_may_read(setup, admin_user, api_client_for):
    resp = api_client_for(admin_user).get(
        url(
            "agreement",
            setup,
            campaign=setup.campaign.pk,
            run=setup.runs[0].pk,
            n_boot=0,
        )
    )
    assert resp.status_code == 200
