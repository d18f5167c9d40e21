"""Few-shot examples from human labels, without leakage.

A run may show its judge k human-scored examples from the development split (random,
stratified by criterion and score level, seeded; or chosen by hand). Examples never
come from the test split, the run never judges an example, its agreement never
counts one, and the pages and the API show the rule and the examples used.
"""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis.selectors.agreement.inputs import load_inputs
from analysis.selectors.agreement.sources import AgreementError
from annotation.models import Response, Skill
from flaskapp.errors import DomainError
from judging import prompts
from judging.fewshot import Candidate, FewShotRequest, draw_stratified
from judging.models import (
    EvalSplit,
    EvalSplitMember,
    JudgeCall,
    JudgeRun,
    JudgeScore,
)
from judging.models import TestSplitLook as SplitLook  # not a test class
from judging.services.execution.store import load_contexts
from judging.services.fewshot import few_shot_examples_draw
from judging.services.runs import judge_run_create, judge_run_start
from tests.analysis.agreement_data import make_agreement_setup
from tests.factories import ResponseFactory
from tests.judging.data import make_config

KEYS = ("comprehension", "factuality", "readability")
MODELS = ("alpha", "beta")
DEV_INSTRUCTIONS, TEST_INSTRUCTIONS = range(4), range(4, 6)


def _score(i: int, m: int, k: int) -> int:
    return 1 + (2 * i + m + k) % 5


@pytest.fixture
def setup(researcher):
    """Six instructions (q0..q5) x two models, two raters scoring every criterion;
    q0-q3 are the development split, q4-q5 the test split."""
    human = {
        (i, model, key): [_score(i, m, k), _score(i, m, k)]
        for i in range(6)
        for m, model in enumerate(MODELS)
        for k, key in enumerate(KEYS)
    }
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[],
        n_instructions=6,
        models=MODELS,
        n_raters=2,
        name="few-shot",
    )
    split = EvalSplit.objects.create(dataset=s.dataset, test_fraction=0.34)
    for (i, _), response in s.responses.items():
        EvalSplitMember.objects.get_or_create(
            split=split,
            instruction_id=response.instruction_id,
            defaults={"part": "test" if i in TEST_INSTRUCTIONS else "dev"},
        )
    s.split = split
    return s


@pytest.fixture
def config(researcher):
    return make_config(researcher)


def _dev_instruction_ids(s) -> set[int]:
    return {
        s.responses[(i, m)].instruction_id for i in DEV_INSTRUCTIONS for m in MODELS
    }


# --- Drawing -------------------------------------------------------------------------


def test_random_rule_draws_only_dev_items_spread_over_criteria_and_score_levels(setup):
    drawn = few_shot_examples_draw(
        dataset=setup.dataset, request=FewShotRequest(k=9, seed=3)
    )
    examples = drawn["examples"]
    assert len(examples) == 9 and drawn["k"] == 9
    assert drawn["rule"] == "random" and drawn["split_id"] == setup.split.pk
    assert {e["instruction_id"] for e in examples} <= _dev_instruction_ids(setup)
    by_skill: dict[str, list[int]] = {}
    for e in examples:
        by_skill.setdefault(e["skill"], []).append(e["score"])
    # Three criteria, three examples each, each on a different score level.
    assert sorted(by_skill) == sorted(KEYS)
    assert all(len(set(scores)) == 3 for scores in by_skill.values()), by_skill
    assert set(examples[0]) == {
        "response_id",
        "instruction_id",
        "instruction_external_id",
        "model",
        "skill",
        "score",
        "rationale",
    }
    assert examples[0]["rationale"].startswith("human ")


def test_random_rule_is_seeded(setup):
    def draw(seed):
        return few_shot_examples_draw(
            dataset=setup.dataset, request=FewShotRequest(k=4, seed=seed)
        )["examples"]

    assert draw(7) == draw(7)
    assert any(draw(seed) != draw(7) for seed in range(1, 6))


def test_excluded_raters_and_gold_items_are_never_examples(setup, researcher):
    from annotation.models import Assignment, RaterExclusion

    RaterExclusion.objects.create(
        campaign=setup.campaign,
        rater=setup.raters[0],
        kind=RaterExclusion.Kind.EXCLUDE,
        reason="careless",
        created_by=researcher,
    )
    q0 = setup.responses[(0, "alpha")].instruction_id
    Assignment.objects.filter(response__instruction_id=q0).update(gold=True)
    examples = few_shot_examples_draw(
        dataset=setup.dataset, request=FewShotRequest(k=20)
    )["examples"]
    assert len(examples) == 3 * len(MODELS) * len(KEYS)  # q1-q3, one score each
    assert all(e["rationale"].startswith("human 1 ") for e in examples)
    assert q0 not in {e["instruction_id"] for e in examples}


def test_stratified_draw_takes_every_level_before_repeating_one():
    candidates = [
        Candidate(n, n, n, str(n), "m", "factuality", score, "")
        for n, score in enumerate([1, 1, 1, 1, 2, 5])
    ]
    picked = draw_stratified(candidates, k=3, seed=0, skill_order=["factuality"])
    assert sorted(c.score for c in picked) == [1, 2, 5]


def test_manual_rule_refuses_a_test_split_response_and_creates_no_run(
    setup, config, researcher
):
    test_response = setup.responses[(4, "alpha")]
    before = JudgeRun.objects.count()
    with pytest.raises(DomainError) as err:
        judge_run_create(
            config=config,
            dataset=setup.dataset,
            user=researcher,
            few_shot=FewShotRequest(
                rule="manual",
                response_ids=(setup.responses[(0, "alpha")].pk, test_response.pk),
            ),
        )
    (problem,) = err.value.problems
    assert problem.field == "few_shot_examples"
    assert f"response {test_response.pk} (instruction q4)" in problem.message
    assert "test split" in problem.message
    assert JudgeRun.objects.count() == before
    assert not JudgeCall.objects.exists()


def test_manual_rule_refuses_other_datasets_and_unscored_responses(setup):
    other = make_agreement_setup(
        setup.campaign.created_by,
        human={},
        judges=[],
        n_instructions=1,
        name="other-set",
    )
    stranger = next(iter(other.responses.values()))
    with pytest.raises(DomainError) as err:
        few_shot_examples_draw(
            dataset=setup.dataset,
            request=FewShotRequest(rule="manual", response_ids=(stranger.pk,)),
        )
    assert f"response {stranger.pk} is not in dataset" in str(err.value)

    unscored = ResponseFactory(
        instruction=setup.responses[(1, "alpha")].instruction, model_name="gamma"
    )
    with pytest.raises(DomainError) as err:
        few_shot_examples_draw(
            dataset=setup.dataset,
            request=FewShotRequest(rule="manual", response_ids=(unscored.pk,)),
        )
    assert err.value.problems[0].field == "few_shot_examples"
    assert f"response {unscored.pk} has no human score" in str(err.value)


def test_manual_rule_takes_the_named_responses_and_criteria(setup):
    chosen = setup.responses[(2, "beta")]
    drawn = few_shot_examples_draw(
        dataset=setup.dataset,
        request=FewShotRequest(
            rule="manual", response_ids=(chosen.pk,), criteria=("factuality",)
        ),
    )
    assert drawn["rule"] == "manual" and drawn["k"] == 1
    (example,) = drawn["examples"]
    assert example["response_id"] == chosen.pk and example["skill"] == "factuality"
    assert example["score"] == _score(2, 1, 1)


def test_few_shot_needs_a_split(setup):
    setup.split.delete()
    with pytest.raises(DomainError) as err:
        few_shot_examples_draw(dataset=setup.dataset, request=FewShotRequest(k=2))
    assert "make a development / test split first" in str(err.value)


def test_few_shot_is_refused_for_other_kinds(setup, config, researcher):
    with pytest.raises(DomainError) as err:
        judge_run_create(
            config=config,
            dataset=setup.dataset,
            user=researcher,
            kind=JudgeRun.Kind.CRITIQUE,
            few_shot=FewShotRequest(k=2),
        )
    assert err.value.problems[0].field == "few_shot"


# --- The run: its calls and its prompts ----------------------------------------------


def _few_shot_run(setup, config, researcher, **request) -> JudgeRun:
    return judge_run_create(
        config=config,
        dataset=setup.dataset,
        user=researcher,
        few_shot=FewShotRequest(**(request or {"k": 4, "seed": 1})),
    )


def test_example_items_are_never_among_the_runs_calls(setup, config, researcher):
    run = _few_shot_run(setup, config, researcher)
    examples = {e["response_id"] for e in run.few_shot["examples"]}
    called = set(run.calls.values_list("response_id", flat=True))
    assert examples and not examples & called
    assert (
        called
        == set(
            Response.objects.filter(instruction__dataset=setup.dataset).values_list(
                "pk", flat=True
            )
        )
        - examples
    )
    assert run.total_calls == len(called) * config.samples
    assert run.estimate["few_shot"]["left_out"] == len(examples)
    assert run.estimate["calls"] == run.total_calls
    assert run.settings_snapshot["few_shot"] == {
        "rule": "random",
        "k": 4,
        "seed": 1,
        "split_id": setup.split.pk,
    }


def test_the_rendered_prompt_shows_the_examples_before_the_item(
    setup, config, researcher
):
    chosen = setup.responses[(1, "alpha")]
    run = _few_shot_run(
        setup, config, researcher, rule="manual", response_ids=(chosen.pk,)
    )
    call = run.calls.order_by("pk").first()
    skills = list(Skill.objects.filter(rubric_id=setup.dataset.rubric_id))
    (ctx,) = load_contexts(run, "", [call.pk], skills, config.prompt)
    text = ctx.messages[-1]["content"]
    assert prompts.EXAMPLES_HEADING in text
    assert chosen.text in text and chosen.instruction.text in text
    assert "Human score for Factuality: " + str(_score(1, 0, 1)) in text
    assert "Reviewer's reason: human 0 on factuality" in text
    item = call.response.instruction.text
    assert text.index(prompts.EXAMPLES_HEADING) < text.index("### Request\n" + item)
    # One block, and none of its lines looks like the item's machine-readable lines.
    block = text[text.index(prompts.EXAMPLES_HEADING) : text.index("### Request")]
    assert "Skill key:" not in block and prompts.ANSWER_START not in block


def _inp(skills=("factuality",), examples=()):
    specs = tuple(
        prompts.SkillSpec(k, k.title(), f"criteria of {k}", ("a",) * 5) for k in skills
    )
    return prompts.PointwiseInput(
        instruction="What is 2 + 2?",
        response="4",
        reference=None,
        skills=specs,
        examples=examples,
    )


EXAMPLE = prompts.FewShotExample(
    instruction="Name a prime.",
    response="Nine.",
    skill_key="factuality",
    skill_name="Factuality",
    score=1,
    rationale="Nine is not prime.",
)


def _render(inp, user_text=prompts.BUILTIN_POINTWISE_USER):
    return prompts.render_pointwise(
        inp,
        system_text="",
        user_text=user_text,
        include_reference=False,
        output_mode="json_schema",
    )[-1]["content"]


def test_render_places_examples_where_the_template_says_or_before_the_request():
    without = _render(_inp())
    assert prompts.EXAMPLES_HEADING not in without
    assert "{examples}" not in without
    shown = _render(_inp(examples=(EXAMPLE,)))
    assert (
        shown.replace(prompts.examples_block((EXAMPLE,), ["factuality"]), "") == without
    )
    custom = "{rubric_block}{instruction}\n{response}\n{examples}{output_instructions}"
    placed = _render(_inp(examples=(EXAMPLE,)), custom)
    assert placed.index("Nine is not prime.") > placed.index("What is 2 + 2?")
    # An example of a criterion this call does not judge is not shown.
    assert prompts.EXAMPLES_HEADING not in _render(
        _inp(skills=("readability",), examples=(EXAMPLE,))
    )


def test_template_check_allows_one_examples_placeholder():
    base = prompts.BUILTIN_POINTWISE_USER
    assert prompts.template_problems(base + "{examples}") == []
    assert prompts.template_problems(base + "{examples}{examples}") == [
        "the template has {examples} more than once"
    ]


# --- Agreement ------------------------------------------------------------------------


def _score_everything(run: JudgeRun, setup) -> None:
    skills = {s.key: s for s in Skill.objects.filter(rubric_id=setup.dataset.rubric_id)}
    JudgeScore.objects.bulk_create(
        JudgeScore(
            run=run,
            response=r,
            skill=skills[key],
            sample_index=0,
            score=3,
            rationale="",
        )
        for r in setup.responses.values()
        for key in KEYS
    )


def test_an_example_item_never_counts_in_that_runs_agreement(setup, config, researcher):
    run = _few_shot_run(setup, config, researcher)
    plain = judge_run_create(config=config, dataset=setup.dataset, user=researcher)
    # As if the run had scores on its examples (an edited or imported run).
    _score_everything(run, setup)
    _score_everything(plain, setup)
    examples = {e["response_id"] for e in run.few_shot["examples"]}
    inp, _ = load_inputs(setup.dataset, [setup.campaign.pk], [run.pk, plain.pk], "", "")
    counted = {int(r) for pk, r in inp.judge[:, :2].tolist() if pk == run.pk}
    assert counted and not counted & examples
    plain_counted = {int(r) for pk, r in inp.judge[:, :2].tolist() if pk == plain.pk}
    assert examples <= plain_counted  # another run's agreement is untouched

    from analysis.selectors.agreement.compute import agreement_compute

    result = agreement_compute(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_ids=[run.pk, plain.pk],
        n_boot=0,
        use_cache=False,
    )
    overall = result.row("overall")
    n_run, n_plain = (overall.judge(pk).stat("mae").n for pk in (run.pk, plain.pk))
    assert n_run == n_plain - len(examples) * len(KEYS)


def test_the_test_split_refuses_a_run_whose_examples_came_from_it(
    setup, config, researcher
):
    run = _few_shot_run(setup, config, researcher)
    look = SplitLook.objects.create(split=setup.split, run_ids=[run.pk])
    # Allowed: its examples are all from the development split.
    load_inputs(
        setup.dataset, [setup.campaign.pk], [run.pk], "split", "test", None, look
    )
    leaked = setup.responses[(5, "beta")]
    run.few_shot["examples"].append(
        {
            **run.few_shot["examples"][0],
            "response_id": leaked.pk,
            "instruction_id": leaked.instruction_id,
        }
    )
    run.save(update_fields=["few_shot"])
    with pytest.raises(AgreementError) as err:
        load_inputs(
            setup.dataset, [setup.campaign.pk], [run.pk], "split", "test", None, look
        )
    assert f"run {run.pk}" in str(err.value) and "test split" in str(err.value)
    load_inputs(setup.dataset, [setup.campaign.pk], [run.pk], "split", "dev")


# --- Pages, API, command -----------------------------------------------------------


def test_the_run_page_and_api_show_the_rule_and_the_examples(
    setup, config, researcher, client_for, api_client_for
):
    run = _few_shot_run(setup, config, researcher)
    example = run.few_shot["examples"][0]
    page = client_for(researcher).get(reverse("judging:run-detail", args=[run.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="run-few-shot"' in html and "seed 1" in html
    assert example["instruction_external_id"] in html and example["rationale"] in html
    data = api_client_for(researcher).get(f"/api/runs/{run.pk}/").json()
    assert data["few_shot"]["rule"] == "random"
    assert data["few_shot"]["examples"] == run.few_shot["examples"]
    assert data["few_shot"]["left_out"] == len(
        {e["response_id"] for e in run.few_shot["examples"]}
    )
    listed = api_client_for(researcher).get("/api/runs/").json()["results"]
    assert any(r["few_shot"] for r in listed if r["id"] == run.pk)


def test_the_new_run_form_creates_a_few_shot_run_and_shows_a_refusal(
    setup, config, researcher, client_for
):
    client = client_for(researcher)
    url = reverse("judging:run-new")
    form = {"config": config.pk, "dataset": setup.dataset.pk, "kind": "pointwise"}
    test_response = setup.responses[(4, "beta")]
    refused = client.post(
        url,
        {
            **form,
            "few_shot_rule": "manual",
            "few_shot_responses": str(test_response.pk),
        },
    )
    assert refused.status_code == 400
    assert "is in the test split" in refused.content.decode()
    assert not JudgeRun.objects.exists()
    made = client.post(url, {**form, "few_shot": "3", "few_shot_seed": "5"})
    assert made.status_code == 302
    run = JudgeRun.objects.get()
    assert run.few_shot["k"] == 3 and run.few_shot["seed"] == 5
    page = client.get(url)
    assert 'name="few_shot_responses"' in page.content.decode()


def test_the_api_creates_a_few_shot_run_and_refuses_test_items(
    setup, config, researcher, api_client_for
):
    client = api_client_for(researcher)
    body = {"config": config.pk, "dataset": setup.dataset.pk}
    test_response = setup.responses[(4, "alpha")]
    refused = client.post(
        "/api/runs/",
        {**body, "few_shot_rule": "manual", "few_shot_responses": [test_response.pk]},
        format="json",
    )
    assert refused.status_code == 400
    assert refused.json()["problems"][0]["field"] == "few_shot_examples"
    assert not JudgeRun.objects.exists()
    made = client.post("/api/runs/", {**body, "few_shot": 2}, format="json")
    assert made.status_code == 201
    assert len(made.json()["few_shot"]["examples"]) == 2


def test_raters_are_refused_everywhere_few_shot_shows(
    setup, config, researcher, rater, client_for, api_client_for
):
    run = _few_shot_run(setup, config, researcher)
    page = client_for(rater)
    assert page.get(reverse("judging:run-detail", args=[run.pk])).status_code == 403
    posted = page.post(
        reverse("judging:run-new"),
        {"config": config.pk, "dataset": setup.dataset.pk, "few_shot": "2"},
    )
    assert posted.status_code == 403
    api = api_client_for(rater)
    assert api.get(f"/api/runs/{run.pk}/").status_code == 403
    created = api.post(
        "/api/runs/",
        {"config": config.pk, "dataset": setup.dataset.pk, "few_shot": 2},
        format="json",
    )
    assert created.status_code == 403
    assert JudgeRun.objects.count() == 1


def test_the_judge_command_takes_few_shot_options(setup, config, researcher):
    test_response = setup.responses[(5, "alpha")]
    common = ["--dataset", setup.dataset.name, "--config", config.name]
    common += ["--user", researcher.username]
    with pytest.raises(CommandError, match="test split"):
        call_command(
            "judge",
            *common,
            "--few-shot-rule",
            "manual",
            "--few-shot-responses",
            str(test_response.pk),
        )
    assert not JudgeRun.objects.exists()
    call_command("judge", *common, "--few-shot", "2", "--few-shot-seed", "4")
    run = JudgeRun.objects.get()
    assert run.few_shot["rule"] == "random" and run.few_shot["seed"] == 4
    assert len(run.few_shot["examples"]) == 2


@pytest.fixture
def eager_tasks(settings):
    from flaskapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.JUDGE_DRIVERS_PER_RUN = 1
    settings.REDIS_URL = ""  # in-process limiter: no Redis needed
    yield
    app.conf.task_always_eager = before


@pytest.mark.django_db(transaction=True)
def test_a_few_shot_run_against_a_real_judge_server_never_scores_an_example(
    setup, researcher, fake_server, eager_tasks
):
    config = make_config(
        researcher, name="fake", base_url=fake_server(latency_ms=0), max_concurrency=4
    )
    run = _few_shot_run(setup, config, researcher, k=3, seed=2)
    judge_run_start(run=run, user=researcher)  # eager: drives inline until done
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    scored = set(run.scores.values_list("response_id", flat=True))
    examples = {e["response_id"] for e in run.few_shot["examples"]}
    assert scored and not scored & examples
    assert (
        run.calls.filter(status=JudgeCall.Status.SUCCEEDED).count() == run.total_calls
    )


def test_the_forms_live_estimate_is_the_runs_estimate_with_its_examples(
    setup, config, researcher, client_for
):
    """The estimate the form shows for k examples is the one the run records: the
    examples' text in every prompt, their responses not judged; a request the draw
    refuses is said beside an estimate without examples."""
    client = client_for(researcher)
    url = reverse("judging:run-new")
    form = {"config": config.pk, "dataset": setup.dataset.pk, "kind": "pointwise"}
    plain = client.get(url, form).context["estimate"]
    live = client.get(url, {**form, "few_shot": "4", "few_shot_seed": "1"})
    estimate = live.context["estimate"]
    run = _few_shot_run(setup, config, researcher)
    assert estimate["calls"] == run.estimate["calls"] == run.total_calls
    assert estimate["input_tokens"] == run.estimate["input_tokens"]
    assert estimate["few_shot"] == run.estimate["few_shot"]
    assert estimate["calls"] < plain["calls"]  # the examples are not judged
    assert estimate["input_tokens"] > plain["input_tokens"] * (
        estimate["calls"] / plain["calls"]
    )  # ... and every prompt carries them
    html = live.content.decode()
    assert 'id="estimate-few-shot"' in html and "4 few-shot examples" in html
    test_response = setup.responses[(4, "beta")]
    refused = client.get(
        url,
        {
            **form,
            "few_shot_rule": "manual",
            "few_shot_responses": str(test_response.pk),
        },
    )
    assert refused.status_code == 200
    assert refused.context["estimate"]["calls"] == plain["calls"]
    assert "is in the test split" in refused.context["estimate"]["few_shot_problem"]
    assert 'id="estimate-few-shot-problem"' in refused.content.decode()
