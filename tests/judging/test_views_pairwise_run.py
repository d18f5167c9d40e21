"""Creating a pairwise judge run (plain or as a bias probe) from the run form."""

from __future__ import annotations

import pytest
from django.urls import reverse

from judging.models import JudgeCall, JudgeRun
from tests.judging.data import make_config

pytestmark = pytest.mark.django_db


def test_form_creates_a_two_order_run_and_shows_the_estimate(
    pref_setup,
    researcher,
    client_for,
):
    dataset, pairs, *_ = pref_setup
    config = make_config(researcher, name="pairwise judge")
    client = client_for(researcher)
    url = reverse("judging:run-new")
    page = client.get(
        url, {"config": config.pk, "dataset": dataset.pk, "kind": "pairwise"}
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="estimate-calls">8<' in html  # 4 pairs x 2 orders x 1 sample
    assert "4 pairs × 2 orders" in html
    resp = client.post(
        url,
        {
            "config": config.pk,
            "dataset": dataset.pk,
            "kind": "pairwise",
            "pair_sample": 3,
            "allow_tie": "on",
            "probe": "bandwagon",
            "name": "probe run",
        },
    )
    assert resp.status_code == 302, resp.content.decode()[:2000]
    run = JudgeRun.objects.get(name="probe run")
    assert run.kind == JudgeRun.Kind.PAIRWISE and run.probe == "bandwagon"
    calls = JudgeCall.objects.filter(run=run)
    assert calls.count() == 6
    assert sorted(calls.values_list("order", flat=True)) == ["ab"] * 3 + ["ba"] * 3
    assert all(c.parsed["probe"]["cue_target"] in ("A", "B") for c in calls)


def test_bad_pairwise_input_names_the_field(pref_setup, researcher, client_for):
    dataset, *_ = pref_setup
    config = make_config(researcher, name="pairwise judge 2")
    resp = client_for(researcher).post(
        reverse("judging:run-new"),
        {
            "config": config.pk,
            "dataset": dataset.pk,
            "kind": "pairwise",
            "pair_sample": 0,
        },
    )
    assert resp.status_code == 400
    assert "greater than or equal to 1" in resp.content.decode()
    assert not JudgeRun.objects.filter(config=config).exists()


def test_a_placeholder_judge_of_imported_verdicts_cannot_start_runs(
    pref_setup, researcher
):
    from flaskapp.errors import DomainError
    from judging.models import JudgeConfig
    from judging.services.runs import judge_run_create, judge_run_create_pairwise

    dataset, *_ = pref_setup
    placeholder = JudgeConfig.objects.create(name="imported only")  # no URL, no model
    for create, extra in (
        (judge_run_create_pairwise, {}),
        (judge_run_create, {}),
        (judge_run_create, {"kind": "metadata"}),
    ):
        with pytest.raises(DomainError) as exc:
            create(config=placeholder, dataset=dataset, user=researcher, **extra)
        assert [p.field for p in exc.value.problems][0] == "config"
        assert "no endpoint" in str(exc.value)
    assert not JudgeRun.objects.filter(config=placeholder).exists()


@pytest.mark.parametrize(
    "kind, extra",
    [
        ("pairwise", {"pair_sample": 3}),
        ("pairwise", {}),
        ("pointwise", {"instruction_limit": 1}),
        ("checklist", {}),
    ],
)
def test_run_form_and_run_page_show_the_same_estimate(
    pref_setup, researcher, client_for, kind, extra
):
    """One cost rule over the same items: what the form promises before the run is
    created is what the run page says the run will cost (calls, tokens, cost)."""
    import re

    dataset, *_ = pref_setup
    config = make_config(
        researcher,
        name=f"priced judge {kind}",
        price_input_per_m=3,
        price_output_per_m=15,
    )
    client = client_for(researcher)
    url = reverse("judging:run-new")
    params = {"config": config.pk, "dataset": dataset.pk, "kind": kind, **extra}
    form = client.get(
        url, params, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-estimate"
    )
    html = form.content.decode()
    calls = re.search(r'id="estimate-calls">([\d,]+)<', html).group(1)
    tokens = re.search(r'id="estimate-tokens">([\d,]+)<', html).group(1)
    cost = re.search(r'id="estimate-cost">([^<]+)<', html).group(1)
    assert int(tokens.replace(",", "")) > 0
    created = client.post(url, {**params, "name": f"estimate {kind}"})
    assert created.status_code == 302, created.content.decode()[:2000]
    run = JudgeRun.objects.get(name=f"estimate {kind}")
    page = client.get(reverse("judging:run-detail", args=[run.pk])).content.decode()
    # (A cache-friendly pointwise run adds the cached share it assumed after a " · ".)
    estimated = re.search(r"Estimated</th><td>([^<]+?)(?: · <span|</td>)", page)
    estimated = estimated.group(1)
    assert estimated == f"{calls} calls · {tokens} tokens · {cost}"
