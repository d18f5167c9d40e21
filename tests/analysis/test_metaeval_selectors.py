"""Meta-evaluation from the database: hand-computed figures, probes, command, API."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis.selectors.metaeval import metaeval_compute, pointwise_probes
from annotation.models import EvaluatedModel
from judging.models import JudgeRun
from tests.analysis.agreement_data import make_agreement_setup, make_dataset
from tests.judging.pairwise_data import add_run

pytestmark = pytest.mark.django_db


def test_hand_computed_figures(pref_setup):
    dataset, _, run_a, _ = pref_setup
    res = metaeval_compute(dataset=dataset, n_boot=100)
    assert [r["id"] for r in res["runs"]] == [run_a.pk]  # probe runs not by default
    assert res["pairs"] == 4 and res["votes"] == 5
    o = res["runs"][0]["report"]["overall"]
    # ab: p0 right, p1 wrong x2 (two votes), p2 wrong, p3 tie=tie right -> 2/5
    assert o["accuracy_ab"]["value"] == pytest.approx(0.4)
    assert o["accuracy_ab"]["n"] == 5
    # ba: p0 right, p1 right x2, p2 wrong, p3 wrong -> 3/5
    assert o["accuracy_ba"]["value"] == pytest.approx(0.6)
    assert o["accuracy_mean"]["value"] == pytest.approx(0.5)
    # right in both orders: only p0's vote -> 1/5
    assert o["accuracy_both"]["value"] == pytest.approx(0.2)
    # consistent: p0, p2 of 4 pairs; p1 chose the first position both times
    assert o["consistency"]["value"] == pytest.approx(0.5)
    assert o["first_position_share"]["value"] == pytest.approx(0.5)
    # human ceiling: only p1 has 2 votes, each agrees with the other
    assert o["human_loo"]["value"] == pytest.approx(1.0)
    assert o["human_loo"]["n"] == 2
    chat = res["runs"][0]["report"]["categories"]["chat"]
    assert chat["accuracy_ab"]["value"] == pytest.approx(1 / 3)
    probes = res["runs"][0]["report"]["probes"]
    assert set(probes) >= {"order", "length"}
    assert probes["order"]["baseline"] is not None


def test_cue_probe_compares_with_the_plain_run(pref_setup):
    dataset, _, run_a, cued = pref_setup
    res = metaeval_compute(dataset=dataset, run_ids=[cued.pk], n_boot=50)
    run = res["runs"][0]
    assert run["probe"] == "bandwagon" and run["base_run"] == run_a.pk
    # follows "1": base 4 of 8 slots, cued 7 of 8 -> +0.375
    assert run["cue"]["value"]["value"] == pytest.approx(0.375)
    assert run["cue"]["baseline"] == 0


def test_self_preference_uses_the_model_family(pref_setup):
    dataset, _, run_a, _ = pref_setup
    EvaluatedModel.objects.create(name="alpha", family="acme")
    EvaluatedModel.objects.create(name="beta", family="other")
    from judging.models import JudgeConfig

    config = JudgeConfig.objects.create(name="acme judge", model_family="acme")
    JudgeRun.objects.filter(pk=run_a.pk).update(config=config)
    res = metaeval_compute(dataset=dataset, run_ids=[run_a.pk], n_boot=20)
    assert "self_preference" in res["runs"][0]["report"]["probes"]


def test_self_preference_without_an_own_family_response_says_so(pref_setup):
    """The judge's family is known, but no evaluated model belongs to it: the probe
    says exactly that instead of "not enough data"."""
    dataset, _, run_a, _ = pref_setup
    EvaluatedModel.objects.create(name="alpha", family="other")
    from judging.models import JudgeConfig

    config = JudgeConfig.objects.create(name="acme judge", model_family="acme")
    JudgeRun.objects.filter(pk=run_a.pk).update(config=config)
    res = metaeval_compute(dataset=dataset, run_ids=[run_a.pk], n_boot=20)
    probe = res["runs"][0]["report"]["probes"]["self_preference"]
    reason = "no response in this data comes from the judge's own model family (acme)"
    assert probe["value"]["value"] is None and probe["value"]["reason"] == reason
    assert probe["details"]["judge_rate"]["reason"] == reason
    # with an own-family response the usual figures come back
    EvaluatedModel.objects.filter(name="alpha").update(family="acme")
    res = metaeval_compute(dataset=dataset, run_ids=[run_a.pk], n_boot=20)
    value = res["runs"][0]["report"]["probes"]["self_preference"]["value"]
    assert value["value"] is not None and value["reason"] != reason


def test_errors_name_the_parameter(pref_setup):
    dataset, *_ = pref_setup
    from analysis.selectors.metaeval import MetaevalError

    for kwargs, field in (
        ({"run_ids": [999999]}, "run"),
        ({"n_boot": -5}, "n_boot"),
        ({"sections": {"x": "not a list"}}, "sections"),
    ):
        with pytest.raises(MetaevalError) as exc:
            metaeval_compute(dataset=dataset, **kwargs)
        assert str(exc.value).startswith(field)
    empty, _ = make_dataset("no-pairs", 1, ("alpha",))
    with pytest.raises(MetaevalError, match="^run"):
        metaeval_compute(dataset=empty)


def test_command_and_api_give_the_same_numbers(
    pref_setup, researcher, rater, api_client_for
):
    dataset, _, run_a, _ = pref_setup
    out = io.StringIO()
    call_command(
        "metaeval",
        "--dataset",
        "pref-set",
        "--format",
        "json",
        "--boot",
        "30",
        "--sections",
        '{"Everything": ["chat", "code"]}',
        stdout=out,
    )
    got = json.loads(out.getvalue())
    url = reverse("analysis_api:metaeval", args=[dataset.pk])
    resp = api_client_for(researcher).get(
        url, {"n_boot": 30, "sections": '{"Everything": ["chat", "code"]}'}
    )
    assert resp.status_code == 200
    assert resp.json() == got
    section = got["runs"][0]["report"]["sections"]["Everything"]
    assert section["subsets"] == {"chat": 3, "code": 1}
    table = io.StringIO()
    call_command("metaeval", "--dataset", "pref-set", "--boot", "10", stdout=table)
    assert "OVERALL" in table.getvalue() and "consistency" in table.getvalue()
    # refused roles and bad input
    assert api_client_for(rater).get(url).status_code == 403
    assert api_client_for(None).get(url).status_code == 401
    bad = api_client_for(researcher).get(url, {"run": "999999"})
    assert bad.status_code == 400 and bad.json()["problems"][0]["field"] == "run"
    with pytest.raises(CommandError, match="^--boot"):
        call_command("metaeval", "--dataset", "pref-set", "--boot", "-1")
    with pytest.raises(CommandError, match="^--sections"):
        call_command("metaeval", "--dataset", "pref-set", "--sections", "{oops")


def test_pointwise_probes_from_scores(researcher, rater, api_client_for):
    human, judge = {}, {}
    for i in range(8):
        for m in ("alpha", "beta"):
            for k, key in enumerate(("readability", "factuality", "comprehension")):
                base = 1 + (i + k + (m == "beta")) % 5
                human[(i, m, key)] = [base, "-", "-"]
                judge[(i, m, key)] = min(5, base + (m == "alpha"))
    s = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=8, name="probe-set"
    )
    EvaluatedModel.objects.create(name="alpha", family="acme")
    from judging.models import JudgeConfig

    config = JudgeConfig.objects.create(name="acme judge 2", model_family="acme")
    JudgeRun.objects.filter(pk=s.runs[0].pk).update(config=config)
    res = pointwise_probes(
        dataset=s.dataset, campaign_ids=[s.campaign.pk], run_id=s.runs[0].pk, n_boot=50
    )
    probes = res["probes"]
    assert set(probes) == {"length", "score_inflation", "halo"}
    # the judge adds +1 to alpha's (own family) scores only, capped at 5
    assert probes["score_inflation"]["value"]["value"] > 0.5
    url = reverse("analysis_api:pointwise-probes", args=[s.dataset.pk])
    resp = api_client_for(researcher).get(
        url, {"campaign": s.campaign.pk, "run": s.runs[0].pk, "n_boot": 50}
    )
    assert resp.status_code == 200 and resp.json() == json.loads(json.dumps(res))
    assert api_client_for(rater).get(url).status_code == 403
    # Without `campaign`: the defaults (every pointwise campaign), here the same one.
    resp = api_client_for(researcher).get(url, {"run": s.runs[0].pk, "n_boot": 50})
    assert resp.status_code == 200 and resp.json() == json.loads(json.dumps(res))


def test_attention_probe_reports_how_often_verdicts_change(pref_setup):
    dataset, pairs, run_a, _ = pref_setup
    # same as judge A except p1's swapped order (2 -> 1) and p3's original order (tie -> 1)
    changed = {0: ("1", "1"), 1: ("1", "1"), 2: ("2", "2"), 3: ("1", "1")}
    att = add_run(
        dataset,
        pairs,
        changed,
        "judge A attention",
        probe="attention",
        probe_settings={},
    )
    res = metaeval_compute(dataset=dataset, run_ids=[att.pk], n_boot=40)
    cue = res["runs"][0]["cue"]
    assert res["runs"][0]["base_run"] == run_a.pk
    assert cue["value"]["value"] == pytest.approx(2 / 8)  # 2 of 8 slots changed
    assert cue["value"]["n"] == 8
    assert cue["details"] == {"pairs": 4, "changed_slots": 2}
    assert cue["baseline"] == 0.0


def test_score_inflation_without_an_own_family_response_says_so(researcher):
    human = {
        (i, m, "readability"): [1 + i % 5, "-", "-"]
        for i in range(6)
        for m in ("alpha", "beta")
    }
    judge = {k: v[0] for k, v in human.items()}
    s = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=6, name="no-own-set"
    )
    EvaluatedModel.objects.create(name="alpha", family="other")
    from judging.models import JudgeConfig

    config = JudgeConfig.objects.create(name="acme judge 3", model_family="acme")
    JudgeRun.objects.filter(pk=s.runs[0].pk).update(config=config)
    res = pointwise_probes(
        dataset=s.dataset, campaign_ids=[s.campaign.pk], run_id=s.runs[0].pk, n_boot=20
    )
    probe = res["probes"]["score_inflation"]
    reason = "no response in this data comes from the judge's own model family (acme)"
    assert probe["value"] == {
        **probe["value"],
        "value": None,
        "n": 12,
        "reason": reason,
    }
    assert probe["details"]["inflation_own"]["reason"] == reason
    # the other models' inflation is defined and keeps its figures
    assert probe["details"]["inflation_other"]["value"] == 0
