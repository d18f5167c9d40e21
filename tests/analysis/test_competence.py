"""Rater models (issue 15): the stats wrapper gives what crowd-kit gives on the same
DataFrame; a campaign with planted raters (four careful ones, one answering at
random) and a judge run that copies the true scores, fitted with every model: the
random rater comes last, the judge first among the humans; exclusions, gold items
and N/A are left out; the cache moves when judge scores or runs are added; the
reliability page's section (page, htmx fragment), the API and the command, refused
to the roles that must not use them."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from scipy.special import expit

from analysis.selectors import competence as selector
from analysis.selectors.competence import (
    campaign_rater_models,
    latent_human_scores,
    ordinal,
)
from analysis.stats import competence as rm
from annotation.models import Assignment, Skill
from annotation.selectors import assignment_skills
from annotation.services.campaign_spec import (
    CampaignSpec,
    GoldPolicy,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create
from annotation.services.exclusions import rater_decision_start
from annotation.services.gold import gold_import
from annotation.services.rating import assignment_next, rating_submit
from judging.models import JudgeScore
from judging.services.run_imports import judge_run_import
from tests.analysis.test_competence_ds import label_frame
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)

METHODS = list(rm.METHODS)
# crowd-kit 1.4.2, called directly below, passes keywords pandas 3.1 deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:::crowdkit")

# --- the statistics against crowd-kit ------------------------------------------------


def planted_arrays(seed: int, n_tasks: int = 40, n_classes: int = 4):
    """Six workers of decreasing accuracy, four labels per task."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, n_classes + 1, n_tasks)
    tasks = np.repeat(np.arange(100, 100 + n_tasks), 4)
    workers = np.concatenate([rng.choice(6, 4, replace=False) for _ in range(n_tasks)])
    accuracy = np.array([0.95, 0.9, 0.8, 0.7, 0.6, 0.25])
    right = rng.random(len(tasks)) < accuracy[workers]
    labels = np.where(right, truth[tasks - 100], rng.integers(1, n_classes + 1,
                                                              len(tasks)))  # fmt: skip
    return tasks, workers * 10 + 7, labels  # worker ids 7, 17, ..., 57


@pytest.mark.parametrize("seed", range(3))
def test_dawid_skene_is_crowdkits(seed):
    from crowdkit.aggregation import DawidSkene

    tasks, workers, labels = planted_arrays(seed)
    fit = rm.fit_rater_model(tasks, workers, labels, method="dawid_skene")
    model = DawidSkene(n_iter=rm.DS_ITER, tol=rm.DS_TOL).fit(
        label_frame(tasks, workers, labels)
    )
    assert list(fit.tasks) == sorted(set(tasks))
    assert list(fit.latent) == [model.labels_[t] for t in fit.tasks]
    for w, competence in zip(fit.workers, fit.competence, strict=True):
        by_hand = sum(
            model.priors_[c] * model.errors_.loc[(w, c), c]
            for c in model.priors_.index
            if (w, c) in model.errors_.index
        )
        assert competence == pytest.approx(by_hand, abs=1e-12)
    assert fit.iterations == len(model.loss_history_)


@pytest.mark.parametrize("seed", range(3))
def test_mace_is_crowdkits(seed):
    from tests.analysis.test_competence_mace import codes, crowdkit_mace

    tasks, workers, labels = planted_arrays(seed)
    fit = rm.fit_rater_model(tasks, workers, labels, method="mace")
    # crowd-kit on workers and labels renamed to their first appearance (see
    # test_competence_mace.py): its spamming_ rows are in that order, and the
    # variational pair (spam, know) is renormalised.
    frame, coded = codes(tasks, workers, labels)
    model = crowdkit_mace(frame, coded, rm.MACE_ITER)
    task_names, worker_names, label_names = (names for _, names in coded)
    latent = np.asarray(label_names)[model.labels_.reindex(task_names).to_numpy()]
    by_task = dict(zip(task_names, latent, strict=True))
    assert list(fit.latent) == [by_task[t] for t in fit.tasks]
    s = model.spamming_
    knowing = {w: s[i, 1] / (s[i, 0] + s[i, 1]) for i, w in enumerate(worker_names)}
    for w, competence in zip(fit.workers, fit.competence, strict=True):
        assert competence == pytest.approx(knowing[w], abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_glad_is_crowdkits(seed):
    from crowdkit.aggregation import GLAD

    tasks, workers, labels = planted_arrays(seed, n_tasks=30)
    fit = rm.fit_rater_model(tasks, workers, labels, method="glad")
    model = GLAD(n_iter=rm.GLAD_ITER, tol=rm.GLAD_TOL, m_step_max_iter=rm.GLAD_M_ITER,
                 m_step_tol=rm.GLAD_M_TOL).fit(label_frame(tasks, workers, labels))  # fmt: skip
    assert list(fit.latent) == [model.labels_[t] for t in fit.tasks]
    scale = np.exp(np.median(model.betas_.to_numpy()))
    for w, competence in zip(fit.workers, fit.competence, strict=True):
        assert competence == pytest.approx(expit(model.alphas_[w] * scale), abs=1e-5)
    assert fit.iterations == len(model.loss_history_) == rm.GLAD_ITER


@pytest.mark.parametrize("method", METHODS)
def test_a_random_worker_is_least_competent_under_every_model(method):
    tasks, workers, labels = planted_arrays(4, n_tasks=80)
    fit = rm.fit_rater_model(tasks, workers, labels, method=method)
    assert fit.workers[np.argmin(fit.competence)] == 57  # accuracy 0.25
    assert fit.workers[np.argmax(fit.competence)] in (7, 17)  # 0.95 and 0.9
    assert ((fit.competence >= 0) & (fit.competence <= 1)).all()
    assert list(fit.n_labels) == [int((workers == w).sum()) for w in fit.workers]


def test_degenerate_inputs_give_a_clear_result_or_name_the_parameter():
    empty = rm.fit_rater_model([], [], [], method="mace")
    assert len(empty.tasks) == len(empty.competence) == 0 and empty.note == "no labels"
    same = rm.fit_rater_model([1, 1, 2], [5, 6, 5], [3, 3, 3], method="glad")
    assert list(same.latent) == [3, 3] and list(same.competence) == [1.0, 1.0]
    assert "nothing tells the workers apart" in same.note
    cases = [
        (([1, 2], [5, 5], [3, 4]), {"method": "dawid_skene"}, "workers:"),
        (([1, 2], [5, 6], [3]), {"method": "dawid_skene"}, "labels:"),
        (([1, 2], [5], [3, 4]), {"method": "dawid_skene"}, "workers:"),
        (([1, 2], [5, 6], [3.0, np.nan]), {"method": "mace"}, "labels:"),
        (([1, 1], [5, 5], [3, 4]), {"method": "glad"}, "tasks:"),
        (([1, 2], [5, 6], [3, 4]), {"method": "majority"}, "method:"),
    ]
    for args, kwargs, field in cases:
        with pytest.raises(ValueError) as caught:
            rm.fit_rater_model(*args, **kwargs)
        assert str(caught.value).startswith(field), (args, kwargs)


def test_ordinals():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st",
        "111th",
    ]  # fmt: skip


# --- a campaign with planted raters and an oracle judge -----------------------------

SKILLS = ["comprehension", "factuality", "readability"]
N_REAL = 24
CAREFUL = ["ann", "bob", "cat", "dan"]


def truth(response_pk: int, skill_key: str) -> int:
    return 2 + (response_pk * 7 + SKILLS.index(skill_key) * 3) % 4  # 2..5


def given(name: str, response_pk: int, skill_key: str, served: int):
    """The score a rater gives: the careful ones are one point off on one item in
    six (each on other items); bob says N/A to readability on his first 3 items;
    rnd answers at random."""
    j = SKILLS.index(skill_key)
    if name == "rnd":
        return int(np.random.default_rng([response_pk, j]).integers(1, 6))
    if name == "bob" and skill_key == "readability" and served < 3:
        return None
    t = truth(response_pk, skill_key)
    k = CAREFUL.index(name)
    if (response_pk + 2 * j + k) % 6 == 0:
        return t - 1 if t > 2 else t + 1
    return t


def import_judge(dataset, researcher, name, scores):
    rows = [
        {"id": ext, "model": "m", "skill": key, "score": value}
        for (ext, key), value in scores.items()
    ]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    return judge_run_import(dataset=dataset, user=researcher, name=name, fmt="jsonl",
                            files=[("judge.jsonl", data)])  # fmt: skip


@pytest.fixture
def planted(db, researcher):
    raters = {n: UserFactory(username=n, role="rater") for n in [*CAREFUL, "rnd"]}
    dataset = DatasetFactory()
    responses = []
    for i in range(N_REAL + 1):
        instruction = InstructionFactory(dataset=dataset, external_id=f"q{i}",
                                         skill_keys=SKILLS)  # fmt: skip
        responses.append(ResponseFactory(instruction=instruction, model_name="m"))
    gold = responses[-1]
    gold_import(dataset=dataset, user=researcher,
                         rows=[(2, {"response_id": gold.pk, "factuality": 4})])  # fmt: skip
    campaign = campaign_create(spec=CampaignSpec(name="planted", dataset=dataset, raters=list(raters.values()), serving=ServingPolicy(overlap=5), gold=GoldPolicy(rate=5)), created_by=researcher)  # fmt: skip
    for name, user in raters.items():
        served = 0
        while a := assignment_next(campaign=campaign, rater=user).assignment:
            scores = {
                s.key: given(name, a.response_id, s.key, served if not a.gold else 99)
                for s in assignment_skills(assignment=a)
            }
            rating_submit(assignment_id=a.pk, rater=user, scores=scores,
                                   active_seconds=20.0)  # fmt: skip
            served += 0 if a.gold else 1
    # The oracle copies the true scores of every response, the gold one too.
    oracle = import_judge(dataset, researcher, "oracle", {
        (f"q{i}", key): truth(r.pk, key) for i, r in enumerate(responses)
        for key in SKILLS
    })  # fmt: skip
    return campaign, raters, oracle, responses


def test_the_planted_campaign_has_gold_and_na(planted):
    campaign, raters, oracle, responses = planted
    gold = Assignment.objects.filter(campaign=campaign, gold=True, status="submitted")
    assert gold.count() == 5  # every rater scored the gold response
    assert gold.first().response_id == responses[-1].pk


@pytest.mark.parametrize("method", METHODS)
def test_random_rater_last_and_the_oracle_judge_first(planted, method):
    campaign, raters, oracle, responses = planted
    report = campaign_rater_models(campaign=campaign, method=method)
    assert report.runs == [(oracle.pk, f"#{oracle.pk} oracle")]
    assert sorted(c.key for c in report.criteria) == sorted(SKILLS)
    for c in report.criteria:
        humans = [a for a in c.annotators if a.kind == "human"]
        assert {a.name for a in humans} == {*CAREFUL, "rnd"}
        assert min(humans, key=lambda a: a.competence).name == "rnd", c.key
        assert c.annotators[0].kind == "judge" and c.annotators[0].rank == 1
        (place,) = c.judges
        assert (place.rank, place.of, place.humans, place.beats) == (1, 6, 5, 1.0)
        assert place.sentence.startswith(
            f"#{oracle.pk} oracle ranks 1st of 6 on {c.name} (more competent than "
            f"100% of the 5 human raters)"
        )
        ranks = [a.rank for a in c.annotators]
        assert ranks == sorted(ranks) and ranks[-1] == 6
        # Gold items left out: 24 real responses, one label each per rater.
        assert c.n_tasks == N_REAL
        n = {a.name: a.n_labels for a in c.annotators}
        assert n["rnd"] == n["ann"] == n[f"#{oracle.pk} oracle"] == N_REAL
        # N/A left out: bob said N/A to readability three times.
        assert n["bob"] == N_REAL - (3 if c.key == "readability" else 0)


def test_latent_human_scores_are_the_humans_alone(planted):
    campaign, raters, oracle, responses = planted
    latent = latent_human_scores(campaign=campaign, method="dawid_skene")
    skill_ids = {
        s.key: s.pk for s in Skill.objects.filter(rubric=campaign.dataset.rubric)
    }
    real = responses[:-1]
    assert set(latent) == {(r.pk, skill_ids[k]) for r in real for k in SKILLS}
    right = sum(latent[(r.pk, skill_ids[k])] == truth(r.pk, k)
                for r in real for k in SKILLS)  # fmt: skip
    assert right >= 0.9 * len(latent)
    # Fitted without the judge: a judge that contradicts the humans changes nothing.
    import_judge(campaign.dataset, UserFactory(role="researcher"), "liar", {
        (f"q{i}", key): 1 for i in range(N_REAL) for key in SKILLS
    })  # fmt: skip
    assert latent_human_scores(campaign=campaign, method="dawid_skene") == latent


def test_an_excluded_rater_is_left_out(planted, researcher):
    campaign, raters, oracle, _ = planted
    rater_decision_start(campaign=campaign, rater=raters["rnd"],
                                  kind="exclude", reason="random", user=researcher)  # fmt: skip
    report = campaign_rater_models(campaign=campaign, method="mace")
    assert report.excluded == ["rnd"]
    for c in report.criteria:
        assert "rnd" not in {a.name for a in c.annotators}
        assert (c.judges[0].rank, c.judges[0].of) == (1, 5)


def test_the_cache_moves_when_judge_scores_or_runs_are_added(
    planted, researcher, monkeypatch
):
    campaign, raters, oracle, responses = planted
    calls = []
    compute = selector._compute
    monkeypatch.setattr(selector, "_compute",
                        lambda *a, **k: calls.append(1) or compute(*a, **k))  # fmt: skip
    # One judge score removed, so that adding it back is a new input.
    first = responses[0]
    JudgeScore.objects.filter(
        run=oracle, response=first, skill__key="factuality"
    ).delete()
    before = campaign_rater_models(campaign=campaign, method="glad")
    assert campaign_rater_models(campaign=campaign, method="glad").seconds == (
        before.seconds
    )
    assert len(calls) == 1  # the second read came from the cache
    judge_n = {c.key: c.annotators for c in before.criteria}
    assert next(a for a in judge_n["factuality"] if a.kind == "judge").n_labels == 23
    JudgeScore.objects.create(
        run=oracle, response=first, sample_index=0, score=truth(first.pk, "factuality"),
        skill=Skill.objects.get(rubric=campaign.dataset.rubric, key="factuality"),
    )  # fmt: skip
    after = campaign_rater_models(campaign=campaign, method="glad")
    assert len(calls) == 2
    factuality = next(c for c in after.criteria if c.key == "factuality")
    assert next(a for a in factuality.annotators if a.kind == "judge").n_labels == 24
    second = import_judge(campaign.dataset, researcher, "second opinion", {
        (f"q{i}", "factuality"): 3 for i in range(N_REAL)
    })  # fmt: skip
    newest = campaign_rater_models(campaign=campaign, method="glad")
    assert len(calls) == 3
    assert [r for r, _ in newest.runs] == [oracle.pk, second.pk]
    factuality = next(c for c in newest.criteria if c.key == "factuality")
    assert len(factuality.judges) == 2
    comprehension = next(c for c in newest.criteria if c.key == "comprehension")
    assert [j.run_id for j in comprehension.judges] == [oracle.pk]


def test_a_run_of_another_dataset_is_refused(planted, researcher):
    campaign, *_ = planted
    elsewhere = DatasetFactory()
    instruction = InstructionFactory(dataset=elsewhere, external_id="x1")
    ResponseFactory(instruction=instruction, model_name="m")
    run = import_judge(elsewhere, researcher, "other", {("x1", "factuality"): 4})
    with pytest.raises(selector.RaterModelError) as caught:
        campaign_rater_models(campaign=campaign, run_ids=[run.pk])
    assert str(caught.value).startswith("run:")


# --- interfaces ---------------------------------------------------------------------


def test_the_page_loads_the_section_with_htmx_and_a_real_href(planted, researcher,
                                                              client_for):  # fmt: skip
    campaign, raters, oracle, _ = planted
    client = client_for(researcher)
    url = f"/reliability/{campaign.pk}/"
    page = client.get(url)
    html = page.content.decode()
    assert page.status_code == 200 and 'id="rater-models"' in html
    assert f'hx-get="{url}?model=dawid_skene" hx-trigger="load"' in html
    assert f'href="{url}?model=dawid_skene#rater-models"' in html
    assert "ranks 1st" not in html  # nothing fitted for the page itself
    # A full reload with the model (no JavaScript) fits it inline.
    page = client.get(url, {"model": "mace"})
    html = page.content.decode()
    assert page.status_code == 200 and 'id="reliability-raters"' in html
    assert f"#{oracle.pk} oracle ranks 1st of 6 on Factuality" in html
    assert 'class="row-judge"' in html and 'id="rater-models-overview"' in html
    # The fragment alone for htmx.
    fragment = client.get(url, {"model": "glad"}, headers={"HX-Request": "true"})
    body = fragment.content.decode()
    assert fragment.status_code == 200 and "HX-Request" in fragment["Vary"]
    assert body.lstrip().startswith(
        '<section class="card section-gap" id="rater-models"'
    )
    assert 'id="reliability-raters"' not in body and "<html" not in body
    assert "ranks 1st of 6 on Readability" in body and "GLAD" in body
    # Once fitted, the page shows the default model's section at once.
    client.get(url, {"model": "dawid_skene"}, headers={"HX-Request": "true"})
    assert "ranks 1st of 6" in client.get(url).content.decode()


def test_a_bad_model_is_a_400_naming_it(planted, researcher, client_for,
                                        api_client_for):  # fmt: skip
    campaign, *_ = planted
    page = client_for(researcher).get(f"/reliability/{campaign.pk}/",
                                      {"model": "majority"})  # fmt: skip
    assert page.status_code == 400
    assert "model: &#x27;majority&#x27; is not a rater model" in page.content.decode()
    fragment = client_for(researcher).get(
        f"/reliability/{campaign.pk}/", {"model": "<b>"}, headers={"HX-Request": "true"}
    )
    assert fragment.status_code == 200  # htmx swaps 2xx only; the fragment says why
    assert "is not a rater model" in fragment.content.decode()
    assert "<b>" not in fragment.content.decode()
    api = api_client_for(researcher).get(
        f"/api/campaigns/{campaign.pk}/rater-models/", {"model": "majority"}
    )
    assert api.status_code == 400
    (problem,) = api.json()["problems"]
    assert (
        problem["field"] == "model" and "dawid_skene, mace, glad" in problem["message"]
    )


def test_api_and_command(planted, researcher, api_client_for):
    campaign, raters, oracle, _ = planted
    body = (
        api_client_for(researcher)
        .get(f"/api/campaigns/{campaign.pk}/rater-models/", {"model": "dawid_skene"})
        .json()
    )
    assert body["model"] == "dawid_skene" and "confusion matrix" in body["competence"]
    assert body["runs"] == [{"id": oracle.pk, "label": f"#{oracle.pk} oracle"}]
    factuality = next(c for c in body["criteria"] if c["key"] == "factuality")
    assert {a["name"] for a in factuality["annotators"]} == {
        *CAREFUL,
        "rnd",
        f"#{oracle.pk} oracle",
    }
    top = factuality["annotators"][0]
    assert (top["kind"], top["id"], top["rank"]) == ("judge", oracle.pk, 1)
    assert 0.9 < top["competence"] <= 1.0
    assert factuality["judges"][0]["beats"] == 1.0
    default = api_client_for(researcher).get(
        f"/api/campaigns/{campaign.pk}/rater-models/"
    )
    assert default.json()["model"] == "dawid_skene"
    out = io.StringIO()
    call_command("reliability", "--campaign", str(campaign.pk), "--model", "mace",
                 stdout=out)  # fmt: skip
    text = out.getvalue()
    assert "MACE: competence = 1 minus" in text
    assert f"#{oracle.pk} oracle ranks 1st of 6 on Comprehension" in text
    out = io.StringIO()
    call_command("reliability", "--campaign", str(campaign.pk), "--model", "glad",
                 "--format", "json", stdout=out)  # fmt: skip
    assert json.loads(out.getvalue())["model"] == "glad"


def test_refused_to_raters_users_without_role_and_anonymous(
    planted, no_role_user, api_client_for, client_for
):
    campaign, raters, *_ = planted
    url = f"/api/campaigns/{campaign.pk}/rater-models/"
    page = f"/reliability/{campaign.pk}/?model=mace"
    for user, codes in ((raters["ann"], {403}), (no_role_user, {403}),
                        (None, {401, 403})):  # fmt: skip
        assert api_client_for(user).get(url).status_code in codes, user
    for user in (raters["ann"], no_role_user):
        for headers in ({}, {"HX-Request": "true"}):
            assert client_for(user).get(page, headers=headers).status_code == 403
    assert client_for(None).get(page).status_code == 302


def test_a_campaign_without_ratings_has_no_criteria(researcher, client_for):
    dataset = DatasetFactory()
    ResponseFactory(instruction=InstructionFactory(dataset=dataset), model_name="m")
    campaign = campaign_create(
        spec=CampaignSpec(name="e", dataset=dataset), created_by=researcher
    )
    report = campaign_rater_models(campaign=campaign, method="mace")
    assert report.criteria == [] and report.runs == []
    page = client_for(researcher).get(f"/reliability/{campaign.pk}/", {"model": "mace"})
    assert page.status_code == 200
    assert "No criterion has scores to model yet." in page.content.decode()
