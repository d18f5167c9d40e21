"""Sampling campaigns: the plan, the estimates, the page, the API and the command."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from analysis.stats.sampling import design_widths, sampled_mean, synthetic_population
from annotation.models import Assignment, Campaign, CampaignItem
from annotation.services.rating import assignment_next, assignment_skip
from flaskapp.errors import DomainError
from judging.designs import inclusion_probabilities, poisson_sample
from judging.models import JudgeRun
from judging.services.sampling import sampling_campaign_start, sampling_plan
from tests.analysis.sampling_data import sampling_setup

pytestmark = pytest.mark.django_db


def _start(researcher, dataset, run, **kwargs):
    options = {"budget": 15, "strategy": "uncertainty", "seed": 3, **kwargs}
    return sampling_campaign_start(
        user=researcher, name="sampled", dataset=dataset, run_id=run.pk, **options
    )


# --- the design ---------------------------------------------------------------------


def test_inclusion_probabilities_sum_to_budget_with_a_floor_and_a_cap():
    u = np.array([0.0] * 8 + [5.0, 5.0])
    pi = inclusion_probabilities(u, 4)
    assert pi.sum() == pytest.approx(4)
    assert (pi > 0).all() and (pi <= 1).all()
    assert pi[-1] == pytest.approx(1.0)  # capped, the excess shared out
    assert pi[0] > 0  # the floor: a sure response can still be drawn
    assert inclusion_probabilities(u, 4, strategy="uniform") == pytest.approx(
        np.full(10, 0.4)
    )


def test_poisson_sample_is_seeded_and_draws_by_probability():
    pi = np.array([1.0, 1.0, 0.5, 0.5] + [1e-9] * 4)
    first, _ = poisson_sample(pi, 7)
    again, _ = poisson_sample(pi, 7)
    assert list(first) == list(again)
    assert {0, 1} <= set(first) and not set(first) & {4, 5, 6, 7}


# --- the plan, stored and served ------------------------------------------------------


def test_sampled_items_are_exactly_the_plan_with_their_probabilities(researcher, rater):
    dataset, responses, run, _ = sampling_setup()
    plan = sampling_plan(dataset=dataset, run_id=run.pk, budget=15, seed=3)
    campaign = _start(researcher, dataset, run)
    items = list(CampaignItem.objects.filter(campaign=campaign).order_by("position"))
    assert [(i.response_id, i.sampling_probability) for i in items] == [
        (r, pytest.approx(p)) for r, p in plan.sample
    ]
    assert campaign.sampling["strategy"] == "uncertainty"
    assert campaign.sampling["run"] == run.pk
    assert campaign.sampling["sampled"] == len(items) < len(responses)
    # The judge disagreed with itself on every fifth instruction: those responses
    # were given the larger probabilities.
    disagree = {r.pk for (i, _), r in responses.items() if i % 5 == 0}
    pi = dict(zip(plan.population, plan.probabilities, strict=True))
    assert min(pi[r] for r in disagree) > max(
        p for r, p in pi.items() if r not in disagree
    )

    campaign.raters.add(rater)
    served = []
    while (result := assignment_next(campaign=campaign, rater=rater)).assignment:
        a = result.assignment
        served.append((a.response_id, a.reason))
        assignment_skip(assignment_id=a.pk, rater=rater, reason="testing the order")
    by_response = {i.response_id: i.sampling_probability for i in items}
    assert [r for r, _ in served] == [i.response_id for i in items]
    for response_id, reason in served:
        p = by_response[response_id]
        assert reason == f"sampled: p={p:.2g} (judge uncertainty)"


def test_uniform_plan_gives_every_response_the_same_probability(researcher):
    dataset, responses, run, _ = sampling_setup()
    campaign = _start(researcher, dataset, run, strategy="uniform", budget=12)
    probabilities = CampaignItem.objects.filter(campaign=campaign).values_list(
        "sampling_probability", flat=True
    )
    assert probabilities and all(p == pytest.approx(0.2) for p in probabilities)
    assert campaign.sampling["why"] == "uniform" and len(responses) == 60


@pytest.mark.parametrize(
    "options, field",
    [
        ({"budget": 0}, "budget"),
        ({"budget": 61}, "budget"),
        ({"budget": "ten"}, "budget"),
        ({"strategy": "loudest"}, "strategy"),
        ({"run_id": None}, "run"),
        ({"run_id": 999999}, "run"),
        ({"seed": -1}, "seed"),
        ({"skill": "no_such_skill"}, "skill"),
    ],
)
def test_bad_input_is_refused_naming_the_parameter(researcher, options, field):
    dataset, _, run, _ = sampling_setup()
    before = (Campaign.objects.count(), CampaignItem.objects.count())
    kwargs = {"budget": 15, "run_id": run.pk, **options}
    with pytest.raises(DomainError) as exc:
        sampling_campaign_start(user=researcher, name="x", dataset=dataset, **kwargs)
    assert field in {p.field for p in exc.value.problems}
    assert (Campaign.objects.count(), CampaignItem.objects.count()) == before


def test_a_run_without_judge_scores_is_refused_naming_run(researcher):
    dataset, _, _, _ = sampling_setup()
    empty = JudgeRun.objects.create(
        dataset=dataset, kind=JudgeRun.Kind.IMPORTED, status="completed"
    )
    with pytest.raises(DomainError) as exc:
        sampling_campaign_start(
            user=researcher, name="x", dataset=dataset, run_id=empty.pk, budget=5
        )
    (problem,) = exc.value.problems
    assert problem.field == "run" and "no judge scores" in problem.message
    assert not Campaign.objects.exists()


# --- the estimates ---------------------------------------------------------------------


def test_ipw_estimate_is_unbiased_over_seeded_repetitions():
    f, u, sigma = synthetic_population(600, seed=4)
    y = f + 0.4 + np.random.default_rng(5).normal(0, 1, f.size) * sigma
    curve = design_widths(
        f=f, uncertainty=u, sigma=sigma, budgets=[60], reps=600, seed=6, y=y
    )
    truth = y.mean()
    for strategy in ("uncertainty", "uniform"):
        # The standard error of a mean of 600 estimates is about width / 4 / 24.
        tolerance = 4 * curve.widths[strategy][0] / 4 / np.sqrt(600)
        assert abs(curve.estimates[strategy][0] - truth) < tolerance
    # The judge alone is off by its bias (0.4): the correction is what removes it.
    assert abs(f.mean() - truth) > 0.3


def test_uncertainty_sampling_narrows_the_interval_when_the_uncertainty_informs():
    f, u, sigma = synthetic_population(1500, seed=1)
    curve = design_widths(
        f=f, uncertainty=u, sigma=sigma, budgets=[75, 150, 300], reps=60, seed=2
    )
    for ours, uniform in zip(
        curve.widths["uncertainty"], curve.widths["uniform"], strict=True
    ):
        assert ours < 0.8 * uniform
    f, u, sigma = synthetic_population(1500, seed=1, informative=False)
    flat = design_widths(f=f, uncertainty=u, sigma=sigma, budgets=[150], reps=60)
    assert flat.widths["uncertainty"][0] > flat.widths["uniform"][0]


def test_sampled_mean_with_every_probability_one_is_the_labels_mean():
    e = sampled_mean([3, 4, 5], [2, 4, 4], [1, 1, 1], [2, 4, 4])
    assert e.value == pytest.approx(4.0) and e.se == 0


# --- the page, the API and the command --------------------------------------------------


def _labelled_campaign(researcher, rater):
    dataset, responses, run, key = sampling_setup()
    campaign = _start(researcher, dataset, run, budget=20)
    from annotation.models import HumanScore, Skill

    skill = Skill.objects.get(rubric=dataset.rubric, key=key)
    for item in CampaignItem.objects.filter(campaign=campaign)[:10]:
        a = Assignment.objects.create(
            campaign=campaign, item=item, response_id=item.response_id, rater=rater,
            status="submitted", reason="test", served_at=campaign.created_at,
            expires_at=campaign.created_at,
        )  # fmt: skip
        HumanScore.objects.create(assignment=a, skill=skill, score=3)
        CampaignItem.objects.filter(pk=item.pk).update(submitted=1, open_slots=0)
    return campaign


def test_sampling_page_shows_estimates_and_both_curves(researcher, rater, client_for):
    campaign = _labelled_campaign(researcher, rater)
    page = client_for(researcher).get(f"/campaigns/{campaign.pk}/sampling/")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'id="sampling-estimates"' in body and "<svg" in body
    assert "judge uncertainty sampling (this campaign)" in body
    assert "uniform sampling" in body and "Simulated" in body
    assert "10 of" in body


def test_sampling_pages_and_api_refuse_raters_and_anonymous(
    researcher, rater, client_for, api_client_for
):
    campaign = _labelled_campaign(researcher, rater)
    for url in (f"/campaigns/{campaign.pk}/sampling/",
                f"/campaigns/sampling/new/?dataset={campaign.dataset_id}"):  # fmt: skip
        assert client_for(rater).get(url).status_code == 403
        assert client_for(None).get(url).status_code == 302  # to the login page
    api = "/api/campaigns/sampling/"
    body = {"dataset": campaign.dataset_id, "run": 1, "budget": 5}
    assert api_client_for(rater).post(api, body, format="json").status_code == 403
    assert api_client_for(None).post(api, body, format="json").status_code in (401, 403)
    get = f"/api/campaigns/{campaign.pk}/sampling/"
    assert api_client_for(rater).get(get).status_code == 403


def test_api_creates_a_sampling_campaign_and_refuses_bad_input(
    researcher, api_client_for
):
    dataset, _, run, _ = sampling_setup()
    client = api_client_for(researcher)
    ok = client.post(
        "/api/campaigns/sampling/",
        {"dataset": dataset.name, "run": run.pk, "budget": 10, "seed": 1},
        format="json",
    )
    assert ok.status_code == 201, ok.content
    assert (
        CampaignItem.objects.filter(campaign_id=ok.json()["id"]).count()
        == (ok.json()["sampling"]["sampled"])
    )
    count = Campaign.objects.count()
    bad = client.post(
        "/api/campaigns/sampling/",
        {"dataset": dataset.pk, "run": run.pk, "budget": 10, "strategy": "x"},
        format="json",
    )
    assert bad.status_code == 400
    assert "strategy" in bad.content.decode()
    assert Campaign.objects.count() == count
    report = client.get(f"/api/campaigns/{ok.json()['id']}/sampling/")
    assert report.status_code == 200
    assert set(report.json()["curve"]["widths"]) == {"uncertainty", "uniform"}


def test_new_sampling_form_creates_and_redirects(researcher, client_for):
    dataset, _, run, _ = sampling_setup()
    c = client_for(researcher)
    assert c.get(f"/campaigns/sampling/new/?dataset={dataset.pk}").status_code == 200
    bad = c.post("/campaigns/sampling/new/",
                 {"dataset": dataset.pk, "name": "s", "run": "", "budget": "5"})  # fmt: skip
    assert bad.status_code == 400 and "<code>run</code>" in bad.content.decode()
    ok = c.post("/campaigns/sampling/new/",
                {"dataset": dataset.pk, "name": "s", "run": run.pk, "budget": "5"})  # fmt: skip
    assert ok.status_code == 302
    assert "/sampling/" in ok["Location"]


def test_command_creates_a_campaign_and_names_a_bad_option(admin_user, capsys):
    dataset, _, run, _ = sampling_setup()
    call_command("sampling_campaign", "--dataset", dataset.name, "--run", str(run.pk),
                 "--budget", "8", "--seed", "2")  # fmt: skip
    assert "responses drawn (judge uncertainty" in capsys.readouterr().out
    with pytest.raises(CommandError, match="--budget"):
        call_command("sampling_campaign", "--dataset", dataset.name,
                     "--run", str(run.pk), "--budget", "0")  # fmt: skip


def test_a_run_of_one_criterion_makes_raters_score_that_criterion(researcher, rater):
    """Without a chosen criterion, raters of a sampling campaign would score each
    instruction's own criteria, which need not hold the one the run scored (and
    the estimates are on): a run of one criterion names it in the plan and the
    campaign asks for it."""
    dataset, _, run, key = sampling_setup()
    campaign = _start(researcher, dataset, run)
    assert campaign.sampling["skill"] == key
    assert campaign.skill_mode == Campaign.SkillMode.CHOSEN
    assert list(campaign.chosen_skills.values_list("key", flat=True)) == [key]
    campaign.raters.add(rater)
    from annotation.selectors.rating import assignment_skills

    served = assignment_next(campaign=campaign, rater=rater).assignment
    assert [s.key for s in assignment_skills(assignment=served)] == [key]


def test_the_report_defaults_to_the_criterion_the_raters_scored(researcher, rater):
    """A plan without a criterion (a run of several): the report reads the run's
    criterion with the most human labels, not merely the first by key."""
    from analysis.selectors.sampling import campaign_sampling_report
    from annotation.models import HumanScore, Skill
    from judging.models import JudgeScore

    dataset, responses, run, key = sampling_setup()
    other = (
        Skill.objects.filter(rubric=dataset.rubric, kind="ordinal")
        .exclude(key=key)
        .order_by("key")
        .first()
    )
    JudgeScore.objects.bulk_create(
        JudgeScore(run=run, response=r, skill=other, score=3)
        for r in responses.values()
    )
    campaign = _start(researcher, dataset, run, budget=20)
    assert campaign.sampling["skill"] == ""
    for item in CampaignItem.objects.filter(campaign=campaign)[:6]:
        a = Assignment.objects.create(
            campaign=campaign, item=item, response_id=item.response_id, rater=rater,
            status="submitted", reason="test", served_at=campaign.created_at,
            expires_at=campaign.created_at,
        )  # fmt: skip
        HumanScore.objects.create(assignment=a, skill=other, score=4)
        CampaignItem.objects.filter(pk=item.pk).update(submitted=1, open_slots=0)
    first = min(key, other.key)
    report = campaign_sampling_report(campaign=campaign)
    assert report.skill == other.key
    assert sum(e.labelled for e in report.estimates) == 6
    assert campaign_sampling_report(campaign=campaign, skill=first).skill == first
