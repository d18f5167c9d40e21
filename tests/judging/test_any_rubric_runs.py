"""Judge runs on rubrics other than FLASK's, end to end against the real fake judge
server: a 0-4 five-attribute rubric, a 1-10 score, a yes/no classification and
critique runs; replies outside a criterion's values become recorded parse failures."""

from __future__ import annotations

import time

import httpx
import pytest

from annotation.models import Response
from annotation.scales import scale_of
from judging.models import JudgeCall, JudgeCritique, JudgeRun, JudgeScore
from judging.services.configs import judge_config_create
from judging.services.prompts import prompt_get_builtin
from judging.services.runs import judge_run_create, judge_run_start
from tests.factories import UserFactory, grant_endpoint_rights
from tests.judging.rubric_data import HELPSTEER, MT_BENCH, YES_NO, dataset_on

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def eager_tasks(settings):
    from flaskapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.JUDGE_DRIVERS_PER_RUN = 1
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.01
    settings.JUDGE_BACKOFF_MAX_SECONDS = 0.05
    settings.REDIS_URL = ""  # in-process limiter
    yield
    app.conf.task_always_eager = before


def make_config(base_url, *, layout="flask", **kw):
    user = UserFactory(username=f"cfg-{time.monotonic_ns()}", role="researcher")
    grant_endpoint_rights(user)
    fields = {
        "name": f"judge-{time.monotonic_ns()}",
        "base_url": base_url,
        "model": "fake-judge",
        "max_concurrency": 4,
        "timeout_seconds": 5,
        "price_input_per_m": 1,
        "price_output_per_m": 2,
        "prompt": prompt_get_builtin("pointwise", layout),
        **kw,
    }
    return judge_config_create(user=user, **fields), user


def run_to_end(config, user, dataset, **kw):
    run = judge_run_create(config=config, dataset=dataset, user=user, **kw)
    judge_run_start(run=run, user=user)  # eager: drives inline until done
    run.refresh_from_db()
    return run


def last_request(base_url) -> dict:
    root = base_url.rstrip("/").removesuffix("/v1")
    return httpx.get(root + "/last_request").json()["body"]


def script(base_url, outcomes) -> None:
    root = base_url.rstrip("/").removesuffix("/v1")
    httpx.post(root + "/script", json={"outcomes": outcomes}).raise_for_status()


def scores_by_skill(run) -> dict[str, list]:
    out: dict[str, list] = {}
    for key, score in JudgeScore.objects.filter(run=run).values_list(
        "skill__key", "score"
    ):
        out.setdefault(key, []).append(score)
    return out


@pytest.mark.parametrize("output_mode", ["json_schema", "text"])
def test_a_0_to_4_five_attribute_run(eager_tasks, fake_server, output_mode):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, output_mode=output_mode)
    dataset = dataset_on(HELPSTEER)
    run = run_to_end(config, user, dataset)
    assert run.status == JudgeRun.Status.COMPLETED, list(
        run.calls.values_list("error", flat=True)
    )
    by_skill = scores_by_skill(run)
    keys = ["helpfulness", "correctness", "coherence", "complexity", "verbosity"]
    assert sorted(by_skill) == sorted(keys)
    n_responses = Response.objects.filter(instruction__dataset=dataset).count()
    for key in keys:
        assert len(by_skill[key]) == n_responses
        assert set(by_skill[key]) <= {0, 1, 2, 3, 4}
    assert 0 in {v for values in by_skill.values() for v in values}  # not 1-5
    body = last_request(base)
    prompt = body["messages"][-1]["content"]
    assert "Scale: whole numbers from 0 (worst) to 4 (best)" in prompt
    assert "Score 2: Partly right." in prompt
    assert "N/A: not allowed for this skill" in prompt
    assert "1 to 5" not in prompt
    if output_mode == "json_schema":
        entry = body["response_format"]["json_schema"]["schema"]["properties"]
        assert entry["helpfulness"]["properties"]["score"] == {
            "type": "integer",
            "enum": [0, 1, 2, 3, 4],
        }
    else:
        assert "response_format" not in body or not body["response_format"]
        assert '"helpfulness": <0-4>' in prompt


def test_a_1_to_10_run_in_the_flame_layout(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, layout="flame", output_mode="text")
    dataset = dataset_on(MT_BENCH, instructions=4)
    run = run_to_end(config, user, dataset)
    assert run.status == JudgeRun.Status.COMPLETED
    values = scores_by_skill(run)["overall"]
    assert len(values) == 8 and set(values) <= set(range(1, 11))
    assert max(values) > 5  # the whole scale is used, not FLASK's 1-5
    prompt = last_request(base)["messages"][-1]["content"]
    assert prompt.startswith("INSTRUCTIONS:\n")
    assert (
        'overall: the score for Overall quality: an integer from 1 to 10, or "N/A"'
        in prompt
    )


def test_a_yes_no_classification_run_stores_label_codes(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, output_mode="json_schema")
    dataset = dataset_on(YES_NO, instructions=4)
    run = run_to_end(config, user, dataset)
    assert run.status == JudgeRun.Status.COMPLETED
    values = scores_by_skill(run)["consistent"]
    assert len(values) == 8 and set(values) == {0, 1}  # codes of "yes" and "no"
    score = JudgeScore.objects.filter(run=run).select_related("skill").first()
    assert scale_of(score.skill).label_of(score.score) in ("yes", "no")
    body = last_request(base)
    assert body["response_format"]["json_schema"]["schema"]["properties"]["consistent"][
        "properties"
    ]["score"] == {"type": "string", "enum": ["yes", "no"]}
    prompt = body["messages"][-1]["content"]
    assert "Labels: yes | no" in prompt
    assert "Label yes (Yes): Every claim is supported." in prompt


def test_a_classification_run_in_text_mode_reads_labels_from_the_prompt(
    eager_tasks, fake_server
):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, output_mode="text", layout="flame")
    dataset = dataset_on(YES_NO, instructions=3)
    run = run_to_end(config, user, dataset)
    assert run.status == JudgeRun.Status.COMPLETED
    assert set(scores_by_skill(run)["consistent"]) <= {0, 1}
    call = run.calls.first()
    assert call.raw_output.rstrip().split("\n")[-1] in (
        "consistent: yes",
        "consistent: no",
    )


@pytest.mark.parametrize(
    "rubric,reason",
    [(HELPSTEER, "score 5 is outside the scale"), (YES_NO, "is not a label here")],
)
def test_a_value_outside_the_criterion_is_a_recorded_parse_failure(
    eager_tasks, fake_server, rubric, reason
):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, output_mode="json_schema", max_parse_retries=1)
    dataset = dataset_on(rubric, instructions=1, models=("m-a",))
    script(base, ["out_of_scale", "out_of_scale"])  # the call and its re-ask
    run = run_to_end(config, user, dataset)
    assert run.status == JudgeRun.Status.FAILED
    call = run.calls.get()
    assert call.status == JudgeCall.Status.FAILED
    assert call.error_kind == "parse" and call.parse_failures == 2
    assert reason in call.error
    assert call.raw_output  # what the judge said is kept
    assert not JudgeScore.objects.filter(run=run).exists()
    # The re-ask named the skill's own values.
    reask = last_request(base)["messages"][-1]["content"]
    assert "could not be read" in reask
    assert ("<0-4>" in reask) if rubric is HELPSTEER else ('<"yes" | "no">' in reask)


def test_a_re_ask_after_an_out_of_scale_reply_recovers(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, output_mode="text")
    dataset = dataset_on(MT_BENCH, instructions=1, models=("m-a",))
    script(base, ["out_of_scale", "ok"])
    run = run_to_end(config, user, dataset)
    assert run.status == JudgeRun.Status.COMPLETED
    call = run.calls.get()
    assert call.parse_failures == 1 and call.status == JudgeCall.Status.SUCCEEDED
    assert 1 <= JudgeScore.objects.get(run=run).score <= 10


@pytest.mark.parametrize("layout", ["flask", "flame"])
def test_a_critique_run_stores_one_critique_per_call(eager_tasks, fake_server, layout):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, layout=layout, samples=2)
    dataset = dataset_on(HELPSTEER, instructions=2)
    run = judge_run_create(config=config, dataset=dataset, user=user, kind="critique")
    assert run.kind == JudgeRun.Kind.CRITIQUE and run.total_calls == 8
    assert run.estimate["calls"] == 8 and run.estimate["output_tokens"] > 0
    assert run.estimate["input_tokens"] > 0
    judge_run_start(run=run, user=user)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    critiques = JudgeCritique.objects.filter(run=run)
    assert critiques.count() == 8
    assert set(critiques.values_list("sample_index", flat=True)) == {0, 1}
    for critique in critiques.select_related("call", "response"):
        assert critique.call.response_id == critique.response_id
        assert f"has {len(critique.response.text)} characters" in critique.text
        assert not critique.text.lower().startswith("critique")
    assert not JudgeScore.objects.filter(run=run).exists()
    prompt = last_request(base)["messages"][-1]["content"]
    assert "Task type: critique" in prompt
    assert "Scale:" not in prompt  # no rubric in a critique prompt


def test_an_empty_critique_is_a_recorded_parse_failure(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, max_parse_retries=0)
    dataset = dataset_on(HELPSTEER, instructions=1, models=("m-a",))
    script(base, ["malformed"])  # the fake answers "critique:" and nothing else
    run = run_to_end(config, user, dataset, kind="critique")
    call = run.calls.get()
    assert run.status == JudgeRun.Status.FAILED
    assert call.error_kind == "parse" and "empty" in call.error
    assert not JudgeCritique.objects.filter(run=run).exists()


def test_a_baseline_judge_cannot_write_critiques(eager_tasks):
    from flaskapp.errors import DomainError

    user = UserFactory(username="base-critic", role="researcher")
    config = judge_config_create(
        user=user, name="length", backend="baseline_length", model="length"
    )
    dataset = dataset_on(HELPSTEER, instructions=1)
    with pytest.raises(DomainError) as exc:
        judge_run_create(config=config, dataset=dataset, user=user, kind="critique")
    assert [p.field for p in exc.value.problems] == ["config"]
    assert not JudgeRun.objects.exists()


def test_a_length_baseline_scores_ordinal_criteria_on_their_scale(eager_tasks):
    user = UserFactory(username="base-scorer", role="researcher")
    config = judge_config_create(
        user=user, name="length", backend="baseline_length", model="length"
    )
    dataset = dataset_on(MT_BENCH, instructions=3)
    run = run_to_end(config, user, dataset)
    assert run.status == JudgeRun.Status.COMPLETED
    values = scores_by_skill(run)["overall"]
    assert len(values) == 6 and set(values) <= set(range(1, 11)) and 10 in values


def test_a_repeated_critique_run_is_served_from_the_cache(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    config, user = make_config(base)
    dataset = dataset_on(HELPSTEER, instructions=2, models=("m-a",))
    first = run_to_end(config, user, dataset, kind="critique")
    root = base.rstrip("/").removesuffix("/v1")
    sent = httpx.get(root + "/stats").json()["requests"]
    assert sent == 2
    again = run_to_end(config, user, dataset, kind="critique")
    assert again.status == JudgeRun.Status.COMPLETED
    assert httpx.get(root + "/stats").json()["requests"] == sent  # nothing sent
    assert set(again.calls.values_list("cached", flat=True)) == {True}
    texts = sorted(
        JudgeCritique.objects.filter(run=first).values_list("text", flat=True)
    )
    assert texts == sorted(
        JudgeCritique.objects.filter(run=again).values_list("text", flat=True)
    )


def test_a_yes_no_run_with_n_a_allowed_lets_the_schema_offer_it(
    eager_tasks, fake_server
):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, output_mode="json_schema")
    dataset = dataset_on(YES_NO.replace(b"allow_na: false", b"allow_na: true"))
    run = run_to_end(config, user, dataset)
    assert run.status == JudgeRun.Status.COMPLETED
    score = last_request(base)["response_format"]["json_schema"]["schema"][
        "properties"
    ]["consistent"]["properties"]["score"]
    assert score == {"type": "string", "enum": ["yes", "no", "N/A"]}
    prompt = last_request(base)["messages"][-1]["content"]
    assert "N/A: allowed when this skill cannot be judged" in prompt
