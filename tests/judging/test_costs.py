"""Costs from reported usage (cached input, reasoning tokens, batch discount), the
cache-friendly prompt layout, and spend caps, against the real local fake server.

Runs are driven in-process with eager Celery tasks (as in test_execution)."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from decimal import Decimal
from io import StringIO

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Sum
from django.urls import reverse

from annotation.models import Skill
from flaskapp.errors import DomainError
from judging import costs, llm, prompts
from judging.fake_replies import prompt_text
from judging.fake_usage import PrefixCache
from judging.models import JudgeCall, JudgeConfig, JudgeRun, JudgeScore
from judging.services import budgets
from judging.services.configs import judge_config_create
from judging.services.runs import judge_run_create, judge_run_start
from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory
from tests.judging.test_execution import eager_tasks, make_config  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

# Long enough that a prompt passes 1,024 tokens (4 characters each): prefix caching.
LONG_REFERENCE = "The reference answer explains every step in detail. " * 110


def long_dataset(n_instructions=3, models=("m-a", "m-b", "m-c")):
    dataset = DatasetFactory()
    for _ in range(n_instructions):
        instruction = InstructionFactory(
            dataset=dataset, reference_answer=LONG_REFERENCE
        )
        for model in models:
            ResponseFactory(
                instruction=instruction,
                model_name=model,
                text=f"{model} answers instruction {instruction.pk} at some length.",
            )
    return dataset


def scores_of(run) -> dict:
    return {
        (s.response_id, s.skill_id): s.score for s in JudgeScore.objects.filter(run=run)
    }


# --- the cost rule -------------------------------------------------------------------


def test_call_cost_prices_cached_input_reasoning_and_the_batch_discount():
    prices = costs.Prices(
        input_per_m=Decimal("2"),
        output_per_m=Decimal("8"),
        cached_input_per_m=Decimal("0.5"),
        batch_discount_percent=Decimal("50"),
    )
    # 1,000 input of which 600 cached; 300 output (reasoning included).
    sync = costs.call_cost(
        prices=prices, input_tokens=1000, cached_input_tokens=600, output_tokens=300
    )
    assert sync == (Decimal(400) * 2 + Decimal(600) * Decimal("0.5") + 300 * 8) / (
        10**6
    )
    batch = costs.call_cost(
        prices=prices,
        input_tokens=1000,
        cached_input_tokens=600,
        output_tokens=300,
        batch=True,
    )
    assert batch == sync / 2
    # No cached price set: cached input costs the input price.
    plain = costs.Prices(input_per_m=Decimal("2"), output_per_m=Decimal("8"))
    assert costs.call_cost(
        prices=plain, input_tokens=1000, cached_input_tokens=600, output_tokens=0
    ) == Decimal("0.002")
    # A cached count above the prompt's is taken as all of it, never negative.
    assert costs.call_cost(
        prices=prices, input_tokens=100, cached_input_tokens=500, output_tokens=0
    ) == Decimal("0.00005")


def test_prices_of_a_run_frozen_before_cached_prices_existed_are_the_old_ones():
    prices = costs.Prices.from_snapshot(
        {"price_input_per_m": "3", "price_output_per_m": "4"}
    )
    assert prices.cached_price == Decimal(3)
    assert prices.batch_discount_percent == 50


# --- the fake server reports cached and reasoning tokens as OpenAI does --------------


def test_prefix_cache_counts_shared_prefixes_in_128_token_steps_from_1024():
    cache = PrefixCache()
    shared = "x" * (4 * 1200)  # 1,200 tokens shared

    def body(tail: str) -> dict:
        return {"model": "m", "messages": [{"role": "user", "content": shared + tail}]}

    assert cache.lookup_and_store(body("a" * 4000)) == 0  # first seen: nothing cached
    # Shares 1,200 tokens with the first: 1,024 + 128 = 1,152 cached.
    assert cache.lookup_and_store(body("b" * 4000)) == 1152
    # The very same prompt again: all its full 128-token steps.
    assert cache.lookup_and_store(body("a" * 4000)) == 1024 + 128 * (
        (2200 - 1024) // 128
    )
    short = {"model": "m", "messages": [{"role": "user", "content": "y" * 4000}]}
    assert cache.lookup_and_store(short) == 0
    assert cache.lookup_and_store(short) == 0  # under 1,024 tokens: never cached
    other_model = {**body("a" * 4000), "model": "other"}
    assert cache.lookup_and_store(other_model) == 0  # the model is part of the prefix


def test_the_client_reads_cached_and_reasoning_tokens(fake_server):
    base = fake_server(latency_ms=1, prefix_cache=True, reasoning_tokens=40)
    text = "Task type: critique\n" + "z" * 6000

    async def two_calls():
        async with llm.JudgeClient(base_url=base, api_key=None, timeout=5) as client:
            request = llm.ChatRequest(
                messages=[{"role": "user", "content": text}],
                model="fake-judge",
                temperature=0,
                max_tokens=400,
            )
            return await client.complete(request), await client.complete(request)

    first, second = asyncio.run(two_calls())
    assert first.cached_input_tokens == 0
    assert second.cached_input_tokens >= 1024
    assert second.cached_input_tokens % 128 == 0
    assert second.cached_input_tokens <= second.input_tokens
    assert first.reasoning_tokens == second.reasoning_tokens == 40
    assert first.output_tokens >= 40  # reasoning is part of the output


def test_usage_details_ignore_what_is_not_a_count():
    assert llm.usage_details({}, 10) == (0, 0)
    assert llm.usage_details(
        {
            "prompt_tokens_details": {"cached_tokens": "12"},
            "completion_tokens_details": {"reasoning_tokens": -3},
        },
        10,
    ) == (0, 0)
    assert llm.usage_details({"prompt_tokens_details": {"cached_tokens": 50}}, 10) == (
        10,
        0,
    )


# --- recorded costs and the cached share ---------------------------------------------


def test_a_run_records_cached_tokens_and_costs_them_at_the_cached_price(
    eager_tasks,  # noqa: F811
    fake_server,
    client_for,
):
    base = fake_server(latency_ms=1, prefix_cache=True, reasoning_tokens=5)
    config, user = make_config(
        base,
        price_input_per_m=10,
        price_output_per_m=40,
        price_cached_input_per_m=1,
        max_concurrency=1,  # one call after the other: every repeat finds its prefix
    )
    run = judge_run_create(config=config, dataset=long_dataset(), user=user)
    judge_run_start(run=run, user=user)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    calls = list(JudgeCall.objects.filter(run=run).order_by("pk"))
    assert len(calls) == 9
    cached = [c for c in calls if c.cached_input_tokens]
    # Per instruction, the first call pays the whole prompt; the two others share
    # its prefix (everything up to the response): at least 6 of 9 are cached.
    assert calls[0].cached_input_tokens == 0
    assert len(cached) >= 6
    for call in calls:
        assert call.reasoning_tokens == 5
        expected = (
            Decimal(call.input_tokens - call.cached_input_tokens) * 10
            + Decimal(call.cached_input_tokens) * 1
            + Decimal(call.output_tokens) * 40
        ) / 10**6
        assert call.cost == expected.quantize(Decimal("0.000001"))
    total_in = sum(c.input_tokens for c in calls)
    share = round(100 * sum(c.cached_input_tokens for c in calls) / total_in)
    assert share > 30
    page = client_for(user).get(reverse("judging:run-detail", args=[run.pk]))
    assert f"{share}% of input cached" in page.content.decode()


def test_estimates_say_what_they_assume(
    eager_tasks,  # noqa: F811
    fake_server,
    client_for,
):
    # The template's order: calls share no long prefix, so no cached input.
    config, user = make_config(
        fake_server(latency_ms=1),
        price_cached_input_per_m=0.1,
        prompt_layout="template",
    )
    run = judge_run_create(config=config, dataset=long_dataset(1), user=user)
    assumes = run.estimate["assumes"]
    assert assumes["cached_input_share"] == 0.0 and assumes["batch"] is False
    assert run.estimate["cached_input_tokens"] == 0
    assert "no cached input" in assumes["text"]
    assert "no batch discount" in assumes["text"]
    page = client_for(user).get(reverse("judging:run-detail", args=[run.pk]))
    assert assumes["text"] in page.content.decode()  # said before the run starts


# --- the cache-friendly layout -------------------------------------------------------

FLASK_KEYS = (
    ("logical_correctness", "factuality", "comprehension"),
    ("readability", "conciseness", "insightfulness"),
    ("harmlessness", "completeness", "metacognition"),
)


def mixed_criteria_dataset():
    """Instructions scored on different criteria of the FLASK rubric, one with
    checklist questions and its own rubric, each answered by two models."""
    dataset = DatasetFactory()
    for n, keys in enumerate(FLASK_KEYS):
        instruction = InstructionFactory(
            dataset=dataset,
            skill_keys=list(keys),
            reference_answer=f"Reference {n}.",
            checklist=(
                [
                    {"skill": keys[0], "question": "Is every step justified?"},
                    {"question": "Does it answer what was asked?"},
                ]
                if n == 0
                else []
            ),
            instance_rubric=(
                {"criteria": "Names the capital.", "scores": {"1": "no", "5": "yes"}}
                if n == 1
                else {}
            ),
        )
        for model in ("m-a", "m-b"):
            ResponseFactory(
                instruction=instruction,
                model_name=model,
                text=f"{model} answers request {n} " + "in some detail " * (5 + n),
            )
    return dataset


def sent_prompts(base) -> list[str]:
    root = base.removesuffix("/v1")
    bodies = httpx.get(root + "/requests").json()["bodies"]
    return [prompt_text(body) for body in bodies]


@pytest.mark.parametrize("mode", JudgeConfig.OutputMode.values)
def test_cache_friendly_prompts_share_one_prefix_whatever_the_criteria(
    eager_tasks,  # noqa: F811
    fake_server,
    client_for,
    mode,
):
    base = fake_server(latency_ms=1, prefix_cache=True)
    dataset = mixed_criteria_dataset()
    config, user = make_config(
        base,
        prompt_layout="cache_friendly",
        output_mode=mode,
        price_input_per_m=1,
        price_cached_input_per_m=Decimal("0.1"),
        price_output_per_m=10,
    )
    run = judge_run_create(config=config, dataset=dataset, user=user)
    judge_run_start(run=run, user=user)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    sent = sent_prompts(base)
    assert len(sent) == 6
    rubric = tuple(
        prompts.SkillSpec.from_model(s)
        for s in Skill.objects.filter(rubric_id=dataset.rubric_id).order_by("position")
    )
    prefix = prompts.cache_friendly_prefix(
        rubric,
        system_text=config.prompt.system_text,
        user_text=config.prompt.user_text,
        output_mode=mode,
    )
    # The whole FLASK rubric: every call's prefix is one text, long enough to cache.
    assert all(s.key in prefix for s in rubric) and len(prefix) // 4 >= 1024
    for text in sent:
        assert text.startswith(prefix)
        # After it, the call's own part says which criteria to score; the response
        # is the last thing shown.
        own = text[len(prefix) :]
        assert own.startswith("### Skills to score\n")
        assert text.rstrip().endswith(prompts.ANSWER_END)
    asked = {
        line.removeprefix(prompts.SKILLS_TO_SCORE_LINE)
        for text in sent
        for line in text.splitlines()
        if line.startswith(prompts.SKILLS_TO_SCORE_LINE)
    }
    assert asked == {", ".join(keys) for keys in FLASK_KEYS}
    checklist = next(t for t in sent if "Is every step justified?" in t)
    assert checklist.index("Is every step justified?") > len(prefix)
    own_rubric = next(t for t in sent if "Names the capital." in t)
    assert own_rubric.index("Names the capital.") > len(prefix)
    # Each criterion scored on what the call asked, nothing else.
    scored = Counter(
        (s.response.instruction_id, s.skill.key)
        for s in JudgeScore.objects.filter(run=run).select_related("response", "skill")
    )
    assert sum(scored.values()) == 18 and set(scored.values()) == {2}
    # Costs from the cached tokens the server reported: every call after the first
    # has at least the prefix's cacheable tokens cached, and is priced by the rule.
    calls = list(JudgeCall.objects.filter(run=run))
    least = costs.cacheable_tokens(len(prefix) // 4)
    # Only the first call paid it all; under a schema, which is part of the prefix
    # and lists the criteria, the first call of each set of criteria.
    firsts = 3 if mode == "json_schema" else 1
    cached = sorted(c.cached_input_tokens for c in calls)
    assert cached[:firsts] == [0] * firsts and cached[firsts] >= least
    for call in calls:
        expected = (
            Decimal(call.input_tokens - call.cached_input_tokens)
            + Decimal(call.cached_input_tokens) * Decimal("0.1")
            + Decimal(call.output_tokens) * 10
        ) / 10**6
        assert call.cost == expected.quantize(Decimal("0.000001"))
    # The estimate assumed exactly that prefix cached after the first call, and
    # said so.
    assert run.estimate["cached_input_tokens"] == least * (len(calls) - firsts)
    assumes = run.estimate["assumes"]
    assert assumes["shared_prefix_tokens"] == len(prefix) // 4
    assert assumes["cached_input_share"] == round(
        run.estimate["cached_input_tokens"] / run.estimate["input_tokens"], 3
    )
    assert assumes["cached_input_share"] > 0.3
    assert "prompt cache on every call after the first" in assumes["text"]
    # The run page's cost panel: the share the provider served, and the assumed one.
    page = client_for(user).get(reverse("judging:run-detail", args=[run.pk]))
    body = page.content.decode()
    input_tokens = sum(c.input_tokens for c in calls)
    share = round(100 * sum(cached) / input_tokens)
    assert f'<span id="run-cached-share">{share}% of input cached</span>' in body
    assumed = round(100 * assumes["cached_input_share"])
    assert f'id="run-estimate-cached">assumed {assumed}% of input cached<' in body


def test_scores_are_the_same_in_both_layouts_and_output_modes(
    eager_tasks,  # noqa: F811
    fake_server,
):
    base = fake_server(latency_ms=1, prefix_cache=True)
    for dataset in (long_dataset(), mixed_criteria_dataset()):
        runs = {}
        for layout in JudgeConfig.PromptLayout.values:
            for mode in JudgeConfig.OutputMode.values:
                config, user = make_config(base, prompt_layout=layout, output_mode=mode)
                run = judge_run_create(config=config, dataset=dataset, user=user)
                judge_run_start(run=run, user=user)
                run.refresh_from_db()
                assert run.status == JudgeRun.Status.COMPLETED
                runs[layout, mode] = run
        for mode in JudgeConfig.OutputMode.values:
            old = scores_of(runs["template", mode])
            new = scores_of(runs["cache_friendly", mode])
            assert old and new == old


def test_the_cache_friendly_template_moves_what_calls_share_first():
    template = prompts.BUILTIN_POINTWISE_USER
    reordered = prompts.cache_friendly_template(template)
    assert reordered.rstrip().endswith(prompts.ANSWER_END)
    shared = max(
        reordered.index("{rubric_block}"), reordered.index("{output_instructions}")
    )
    first_own = reordered.index("{skills_to_score}")
    assert shared < first_own < reordered.index("{checklist_block}")
    assert first_own < reordered.index("{instruction}") < reordered.index("{response}")

    # Every word and placeholder of the template is kept; only the call's own slot
    # is added.
    def words(text):
        return sorted(re.sub(r"\{\w+\}", " ", text).split())

    def slots(text):
        return sorted(re.findall(r"\{\w+\}", text))

    assert words(reordered) == words(template)
    assert slots(reordered) == sorted([*slots(template), "{skills_to_score}"])
    # A custom template with the rubric after the request: moved up as well.
    custom = (
        "Q: {instruction}\n{response}\n\n{rubric_block}Reply: {output_instructions}"
    )
    moved = prompts.cache_friendly_template(custom)
    assert moved.index("{rubric_block}") < moved.index("{instruction}")
    assert moved.index("{output_instructions}") < moved.index("{skills_to_score}")


def test_existing_configs_keep_the_template_order_new_ones_are_cache_friendly(
    researcher,
):
    field = JudgeConfig._meta.get_field("prompt_layout")
    assert field.default == JudgeConfig.PromptLayout.CACHE_FRIENDLY
    with pytest.raises(DomainError) as refused:
        judge_config_create(
            user=researcher,
            name="bad layout",
            backend="baseline_length",
            prompt_layout="sideways",
        )
    assert [p.field for p in refused.value.problems] == ["prompt_layout"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("batch_discount_percent", 101),
        ("batch_discount_percent", -1),
        ("price_cached_input_per_m", "-0.5"),
        ("default_budget", "0"),
    ],
)
def test_bad_cost_settings_are_refused_naming_the_field(researcher, field, value):
    with pytest.raises(DomainError) as refused:
        judge_config_create(
            user=researcher, name="bad", backend="baseline_length", **{field: value}
        )
    assert field in [p.field for p in refused.value.problems]
    assert not JudgeConfig.objects.filter(name="bad").exists()


# --- spend caps ----------------------------------------------------------------------


def test_a_run_stops_at_its_budget_and_resumes_with_a_higher_one(
    eager_tasks,  # noqa: F811
    fake_server,
    settings,
    api_client_for,
):
    base = fake_server(latency_ms=20)
    config, user = make_config(
        base,
        price_input_per_m=1000,
        price_output_per_m=2000,
        max_tokens=300,
        max_concurrency=2,
    )
    dataset = long_dataset(n_instructions=4, models=("m-a", "m-b"))
    probe = judge_run_create(config=config, dataset=dataset, user=user)
    per_call = budgets.run_call_estimate(probe)
    assert per_call > 0
    probe.delete()

    # A cap below one call's estimate is refused at creation, naming the field.
    with pytest.raises(DomainError) as refused:
        judge_run_create(config=config, dataset=dataset, user=user, budget=per_call / 2)
    assert [p.field for p in refused.value.problems] == ["budget"]
    assert not JudgeRun.objects.filter(dataset=dataset).exists()

    cap = (per_call * Decimal("3.5")).quantize(Decimal("0.0001"))
    run = judge_run_create(config=config, dataset=dataset, user=user, budget=cap)
    judge_run_start(run=run, user=user)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.STOPPED_BUDGET
    calls = JudgeCall.objects.filter(run=run)
    spent = calls.aggregate(s=Sum("cost"))["s"]
    done = calls.filter(status=JudgeCall.Status.SUCCEEDED).count()
    # Never more than the cap plus the calls in flight at their estimate (here at
    # most 2 in flight; the estimate is a worst case, so within the cap itself).
    assert spent <= cap + 2 * per_call
    assert spent <= cap
    # 3.5 worst-case estimates fit at least 3 calls; actual costs below their
    # estimate free room for more, but not for all 8.
    assert 3 <= done < 8
    assert calls.filter(status=JudgeCall.Status.PENDING).count() == 8 - done
    assert not calls.filter(status=JudgeCall.Status.RUNNING).exists()

    # Starting it again without a higher cap is refused, naming the budget.
    with pytest.raises(DomainError) as again:
        judge_run_start(run=run, user=user)
    assert [p.field for p in again.value.problems] == ["budget"]
    client = api_client_for(user)
    bad = client.post(f"/api/runs/{run.pk}/start/", {"budget": "lots"}, format="json")
    assert bad.status_code == 400 and "budget" in bad.content.decode()
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.STOPPED_BUDGET and run.budget == cap

    resumed = client.post(
        f"/api/runs/{run.pk}/start/", {"budget": str(cap * 10)}, format="json"
    )
    assert resumed.status_code == 200, resumed.content
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    assert run.budget == cap * 10
    assert calls.filter(status=JudgeCall.Status.SUCCEEDED).count() == 8
    assert calls.aggregate(s=Sum("cost"))["s"] <= cap * 10
    assert httpx.get(base.removesuffix("/v1") + "/stats").json()["requests"] == 8


def test_the_run_page_says_a_run_stopped_at_its_budget(
    eager_tasks,  # noqa: F811
    fake_server,
    client_for,
):
    config, user = make_config(
        fake_server(latency_ms=1),
        price_input_per_m=1000,
        price_output_per_m=2000,
        max_tokens=300,
        max_concurrency=1,
    )
    dataset = long_dataset(n_instructions=2, models=("m-a",))
    probe = judge_run_create(config=config, dataset=dataset, user=user)
    per_call = budgets.run_call_estimate(probe)
    probe.delete()
    run = judge_run_create(
        config=config,
        dataset=dataset,
        user=user,
        budget=(per_call * Decimal("1.2")).quantize(Decimal("0.0001")),
    )
    judge_run_start(run=run, user=user)
    page = client_for(user).get(reverse("judging:run-detail", args=[run.pk]))
    text = page.content.decode()
    assert "Stopped at its budget" in text
    assert 'name="budget"' in text and "Resume" in text


# --- the judge command ---------------------------------------------------------------


def _judge(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("judge", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_judge_command_caps_a_run_and_resumes_it_with_a_higher_budget(
    eager_tasks,  # noqa: F811
    fake_server,
    admin_user,
):
    base = fake_server(latency_ms=1)
    dataset = long_dataset(n_instructions=2, models=("m-a", "m-b"))
    endpoint = [
        "--dataset",
        dataset.name,
        "--base-url",
        base,
        "--model",
        "fake-judge",
        "--price-in",
        "1000",
        "--price-out",
        "2000",
        "--max-tokens",
        "300",
        "--concurrency",
        "1",
    ]
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("judge", *endpoint, "--budget", "0.0001", stderr=err)
    assert "budget" in err.getvalue()
    assert not JudgeRun.objects.filter(dataset=dataset).exists()
    config = JudgeConfig.objects.get(base_url=base)
    probe = judge_run_create(config=config, dataset=dataset, user=admin_user)
    per_call = budgets.run_call_estimate(probe)
    probe.delete()

    cap = (per_call * Decimal("1.5")).quantize(Decimal("0.0001"))
    with pytest.raises(CommandError):  # --wait: a run that did not complete exits 1
        _judge(*endpoint, "--budget", str(cap), "--wait")
    run = JudgeRun.objects.get(dataset=dataset)
    assert run.status == JudgeRun.Status.STOPPED_BUDGET and run.budget == cap
    assert run.calls.filter(status=JudgeCall.Status.PENDING).exists()

    out, _ = _judge(
        "--dataset", dataset.name, "--resume", str(run.pk), "--budget", "1000", "--wait"
    )
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED and run.budget == 1000
    assert f"Run {run.pk} completed" in out
    assert run.calls.filter(status=JudgeCall.Status.SUCCEEDED).count() == 4


def test_pairwise_cache_friendly_prompt_keeps_its_parts_and_ends_with_the_answers():
    old = prompts.render_pairwise("Q?", "first", "second", allow_tie=True)
    new = prompts.render_pairwise(
        "Q?", "first", "second", allow_tie=True, cache_friendly=True
    )
    assert old[0] == new[0]  # the system message
    assert new[1]["content"].endswith("### End of answers")
    assert new[1]["content"].index("### How to reply") < new[1]["content"].index(
        "### Request"
    )
    assert sorted(old[1]["content"].split()) == sorted(new[1]["content"].split())
