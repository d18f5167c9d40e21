"""Pairwise judge runs end to end through the real engine and a real local
chat-completions server: both orders, verdicts mapped back to the original numbering,
failures kept with their reason and retryable, cache, probes, command, API and pages.

In-process tests drive runs with eager Celery tasks; the integration test at the end
uses a real Celery worker process on Redis and PostgreSQL."""

from __future__ import annotations

import io
import random
from collections import Counter

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import PreferencePair
from flaskapp.errors import DomainError
from judging.models import (
    JudgeCache,
    JudgeCall,
    JudgeRun,
    PairwiseVerdict,
    PromptTemplate,
)
from judging.services.configs import judge_config_create
from judging.services.runs import (
    judge_run_create_pairwise,
    judge_run_retry_failed,
    judge_run_start,
)
from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory
from tests.judge_fixtures import wait_for
from tests.judging import FakeJudge
from tests.judging.test_execution import make_config, stats

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def eager_tasks(settings):
    from flaskapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.JUDGE_DRIVERS_PER_RUN = 1
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.01
    settings.JUDGE_BACKOFF_MAX_SECONDS = 0.05
    settings.REDIS_URL = ""
    yield
    app.conf.task_always_eager = before


def make_pairs(n=4, categories=("chat", "safety")):
    """A dataset with `n` instructions, two responses each (models m-1 and m-2) and one
    pair per instruction, categories cycling through `categories`."""
    dataset = DatasetFactory()
    for i in range(n):
        instruction = InstructionFactory(dataset=dataset, text=f"Request {i}: explain.")
        one = ResponseFactory(
            instruction=instruction, model_name="m-1", text=f"First answer to {i}."
        )
        two = ResponseFactory(
            instruction=instruction,
            model_name="m-2",
            text=f"Second answer to {i}, somewhat longer than the first.",
        )
        PreferencePair.objects.create(
            dataset=dataset,
            instruction=instruction,
            response_1=one,
            response_2=two,
            category=categories[i % len(categories)],
        )
    return dataset


def create_and_run(config, user, dataset, **kw):
    run = judge_run_create_pairwise(config=config, dataset=dataset, user=user, **kw)
    judge_run_start(run=run, user=user)  # eager: drives inline until done
    run.refresh_from_db()
    return run


def verdicts(run):
    return {
        (v.pair_id, v.order): (v.verdict_raw, v.verdict)
        for v in PairwiseVerdict.objects.filter(run=run)
    }


# --- creation -------------------------------------------------------------------------


def test_two_calls_per_pair_and_sample_in_both_orders():
    config, user = make_config("http://127.0.0.1:9/v1", samples=2)
    dataset = make_pairs(3)
    run = judge_run_create_pairwise(config=config, dataset=dataset, user=user)
    assert run.kind == "pairwise" and run.status == "pending"
    calls = list(JudgeCall.objects.filter(run=run))
    assert run.total_calls == len(calls) == 12 == run.estimate["calls"]
    keys = Counter((c.pair_id, c.order, c.sample_index) for c in calls)
    assert max(keys.values()) == 1
    for pair in PreferencePair.objects.filter(dataset=dataset):
        for s in (0, 1):
            assert {(pair.pk, "ab", s), (pair.pk, "ba", s)} <= set(keys)
    for call in calls:
        assert call.response_id is None and call.parsed is None
        assert (
            call.instruction_id
            == PreferencePair.objects.get(pk=call.pair_id).instruction_id
        )
    assert run.settings_snapshot["allow_tie"] is True
    assert run.settings_snapshot["layout"] == "flask"
    assert run.estimate["input_tokens"] > 0 and run.estimate["output_tokens"] > 0


def test_category_filter_and_seeded_sample():
    config, user = make_config("http://127.0.0.1:9/v1")
    dataset = make_pairs(10)
    run = judge_run_create_pairwise(
        config=config, dataset=dataset, user=user, categories=["safety"]
    )
    pairs = set(JudgeCall.objects.filter(run=run).values_list("pair_id", flat=True))
    assert pairs == set(
        PreferencePair.objects.filter(dataset=dataset, category="safety").values_list(
            "pk", flat=True
        )
    )
    picked = []
    for _ in range(2):
        run = judge_run_create_pairwise(
            config=config, dataset=dataset, user=user, sample=4, seed=11
        )
        picked.append(
            sorted(
                set(JudgeCall.objects.filter(run=run).values_list("pair_id", flat=True))
            )
        )
        assert run.total_calls == 8
    assert picked[0] == picked[1] and len(picked[0]) == 4  # same seed, same pairs
    other = judge_run_create_pairwise(
        config=config, dataset=dataset, user=user, sample=4, seed=12
    )
    assert set(JudgeCall.objects.filter(run=other).values_list("pair_id", flat=True))


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"categories": ["nope"]}, "categories"),
        ({"sample": 0}, "sample"),
        ({"probe": "halo"}, "probe"),
        ({"probe": "bandwagon", "cue": "Everyone liked one."}, "cue"),
        ({"cue": "Everyone liked {target}."}, "cue"),
    ],
)
def test_bad_input_is_refused_naming_the_field(kw, field):
    config, user = make_config("http://127.0.0.1:9/v1")
    dataset = make_pairs(2)
    with pytest.raises(DomainError) as exc:
        judge_run_create_pairwise(config=config, dataset=dataset, user=user, **kw)
    assert field in [p.field for p in exc.value.problems]
    assert not JudgeRun.objects.exists() and not JudgeCall.objects.exists()


def test_no_pairs_baseline_and_rater_are_refused(rater):
    from django.core.exceptions import PermissionDenied

    config, user = make_config("http://127.0.0.1:9/v1")
    with pytest.raises(DomainError) as exc:
        judge_run_create_pairwise(config=config, dataset=DatasetFactory(), user=user)
    assert exc.value.problems[0].field == "dataset"
    baseline = judge_config_create(user=user, name="len", backend="baseline_length")
    with pytest.raises(DomainError) as exc:
        judge_run_create_pairwise(config=baseline, dataset=make_pairs(1), user=user)
    assert exc.value.problems[0].field == "config"
    with pytest.raises(PermissionDenied):
        judge_run_create_pairwise(config=config, dataset=make_pairs(1), user=rater)
    assert not JudgeRun.objects.exists()


# --- execution ------------------------------------------------------------------------


@pytest.mark.parametrize("output_mode", ["text", "json_schema"])
def test_a_judge_that_always_says_A_is_perfectly_position_biased(
    eager_tasks, fake_server, output_mode
):
    base = fake_server(latency_ms=1, pairwise_verdict="A")
    config, user = make_config(base, output_mode=output_mode)
    dataset = make_pairs(3)
    run = create_and_run(config, user, dataset)
    assert run.status == JudgeRun.Status.COMPLETED
    got = verdicts(run)
    pairs = PreferencePair.objects.filter(dataset=dataset)
    # Hand-checked: A in order ab is response 1; A in order ba is response 2.
    assert got == {
        **{(p.pk, "ab"): ("A", "1") for p in pairs},
        **{(p.pk, "ba"): ("A", "2") for p in pairs},
    }
    for call in JudgeCall.objects.filter(run=run):
        assert call.status == "succeeded" and call.cost > 0 and call.input_tokens > 0
        assert call.parsed["verdict_raw"] == "A"
        verdict = PairwiseVerdict.objects.get(call=call)
        assert verdict.rationale and verdict.sample_index == 0
    assert stats(base)["requests"] == 6


def test_the_prompt_shows_the_responses_in_the_call_order(eager_tasks, fake_server):
    base = fake_server(latency_ms=1, pairwise_verdict="B")
    config, user = make_config(base, output_mode="text")
    dataset = make_pairs(1)
    pair = PreferencePair.objects.get(dataset=dataset)
    run = judge_run_create_pairwise(config=config, dataset=dataset, user=user)
    judge = FakeJudge(base)
    for order in ("ab", "ba"):
        # Drive one order at a time to see exactly what each call sent.
        JudgeCall.objects.filter(run=run).exclude(order=order).update(
            status="cancelled"
        )
        JudgeCall.objects.filter(run=run, order=order).update(status="pending")
        JudgeRun.objects.filter(pk=run.pk).update(status="pending")
        judge_run_start(run=run, user=user)
        text = judge.last_request()["messages"][-1]["content"]
        first, second = pair.response_1.text, pair.response_2.text
        if order == "ba":
            first, second = second, first
        assert f"### Answer A\n{first}\n\n### Answer B\n{second}\n" in text
    assert verdicts(run) == {(pair.pk, "ab"): ("B", "2"), (pair.pk, "ba"): ("B", "1")}


def test_flame_layout_config_and_no_ties(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    template = PromptTemplate.objects.create(
        name="flame", layout="flame", kind="pairwise", user_text="(FLAMe layout)"
    )
    config, user = make_config(base, output_mode="text", prompt=template)
    run = create_and_run(config, user, make_pairs(4), allow_tie=False)
    assert run.status == JudgeRun.Status.COMPLETED
    assert run.settings_snapshot["layout"] == "flame"
    sent = FakeJudge(base).last_request()["messages"]
    assert sent[0]["content"].startswith("INSTRUCTIONS:\nTask type: pairwise")
    assert "a tie is not allowed" in sent[0]["content"].split("EVALUATION:")[1]
    assert '"Verdict: tie"' not in sent[0]["content"]
    got = verdicts(run)
    assert len(got) == 8 and {raw for raw, _ in got.values()} <= {"A", "B"}
    for (_pair, order), (raw, mapped) in got.items():
        assert (
            mapped
            == {"ab": {"A": "1", "B": "2"}, "ba": {"A": "2", "B": "1"}}[order][raw]
        )


def test_unparseable_answers_fail_with_the_reason_and_retry_works(
    eager_tasks, fake_server
):
    base = fake_server(latency_ms=1, pairwise_verdict="tie")
    config, user = make_config(base, output_mode="text", max_parse_retries=1)
    dataset = make_pairs(2)
    # Ties are not allowed, and the judge insists on "tie": unusable answers.
    run = create_and_run(config, user, dataset, allow_tie=False)
    assert run.status == JudgeRun.Status.FAILED
    calls = list(JudgeCall.objects.filter(run=run))
    for call in calls:
        assert call.status == "failed" and call.error_kind == "parse"
        assert "a tie is not allowed" in call.error
        assert call.raw_output.endswith("Verdict: tie")  # the raw answer is kept
        assert call.parse_failures == 2  # asked, then re-asked once
    assert not PairwiseVerdict.objects.filter(run=run).exists()  # no verdict row
    # Re-asks told the judge why (the last request is a re-ask with the reason).
    last = FakeJudge(base).last_request()["messages"]
    assert last[-1]["role"] == "user" and "a tie is not allowed" in last[-1]["content"]
    # A judge that now answers: retrying the failed calls completes the run.
    FakeJudge(base).reset(pairwise_verdict="B")
    assert judge_run_retry_failed(run=run, user=user) == 4
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    assert set(verdicts(run).values()) == {("B", "2"), ("B", "1")}
    assert PairwiseVerdict.objects.filter(run=run).count() == 4


def test_transport_failures_keep_their_reason(eager_tasks, fake_server, settings):
    settings.JUDGE_MAX_TRANSPORT_RETRIES = 0
    base = fake_server(latency_ms=1)
    config, user = make_config(base)
    dataset = make_pairs(2)
    FakeJudge(base).script("server_error", "ok", "ok", "ok")
    run = create_and_run(config, user, dataset)
    assert run.status == JudgeRun.Status.FAILED
    failed = JudgeCall.objects.get(run=run, status="failed")
    assert failed.error_kind == "server_error" and failed.error
    assert PairwiseVerdict.objects.filter(run=run).count() == 3
    assert not PairwiseVerdict.objects.filter(call=failed).exists()
    assert judge_run_retry_failed(run=run, user=user) == 1
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    assert PairwiseVerdict.objects.filter(run=run).count() == 4


def test_cache_serves_a_rerun_without_new_requests(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    config, user = make_config(base)
    dataset = make_pairs(3)
    first = create_and_run(config, user, dataset)
    paid = stats(base)["requests"]
    assert paid == 6 and JudgeCache.objects.count() == 6
    second = create_and_run(config, user, dataset)
    assert stats(base)["requests"] == paid
    calls = JudgeCall.objects.filter(run=second)
    assert set(calls.values_list("cached", flat=True)) == {True}
    assert sum(c.cost for c in calls) == 0
    assert verdicts(second) == verdicts(first)


def test_derived_verdicts_map_back_consistently(eager_tasks, fake_server):
    """The fake judge prefers the better answer in both orders (no position bias):
    the mapped verdicts of the two orders then agree."""
    base = fake_server(latency_ms=1, position_bias=0.0)
    config, user = make_config(base, output_mode="text")
    run = create_and_run(config, user, make_pairs(6), allow_tie=False)
    got = verdicts(run)
    for pair_id in {p for p, _ in got}:
        assert got[(pair_id, "ab")][1] == got[(pair_id, "ba")][1]
        assert got[(pair_id, "ab")][0] != got[(pair_id, "ba")][0]


# --- probes ---------------------------------------------------------------------------


def test_bandwagon_cue_reaches_the_prompt_and_its_target_is_recorded(
    eager_tasks, fake_server
):
    base = fake_server(latency_ms=1, cue_follow=1.0)
    config, user = make_config(base, output_mode="text")
    dataset = make_pairs(5)
    run = judge_run_create_pairwise(
        config=config, dataset=dataset, user=user, probe="bandwagon", seed=3
    )
    assert run.probe == "bandwagon"
    assert run.probe_settings["targets"] == {"A": 3, "B": 2}  # balanced
    calls = list(JudgeCall.objects.filter(run=run))
    by_pair: dict[int, set] = {}
    for call in calls:
        probe = call.parsed["probe"]
        assert probe["cue"] == (
            f"Most people who read both answers preferred answer {probe['cue_target']}."
        )
        expected = {"ab": {"A": "1", "B": "2"}, "ba": {"A": "2", "B": "1"}}
        assert probe["cue_target_original"] == expected[call.order][probe["cue_target"]]
        by_pair.setdefault(call.pair_id, set()).add(probe["cue_target"])
    assert all(len(t) == 1 for t in by_pair.values())  # one position per pair
    judge_run_start(run=run, user=user)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    last = FakeJudge(base).last_request()["messages"][-1]["content"]
    assert "### Note\nMost people who read both answers preferred answer " in last
    for call in JudgeCall.objects.filter(run=run):
        # The record survives the result, and this judge always follows the cue.
        assert call.parsed["probe"]["cue_target"] == call.parsed["verdict_raw"]
        verdict = PairwiseVerdict.objects.get(call=call)
        assert verdict.verdict == call.parsed["probe"]["cue_target_original"]
    # Same seed, same targets.
    again = judge_run_create_pairwise(
        config=config, dataset=dataset, user=user, probe="bandwagon", seed=3
    )
    targets = lambda r: {  # noqa: E731
        (c.pair_id, c.order): c.parsed["probe"]["cue_target"]
        for c in JudgeCall.objects.filter(run=r)
    }
    assert targets(again) == targets(run)


def test_attention_probe_injects_an_irrelevant_sentence(eager_tasks, fake_server):
    from judging.probes import ATTENTION_SENTENCES

    base = fake_server(latency_ms=1)
    config, user = make_config(base, output_mode="text")
    template = PromptTemplate.objects.create(
        name="flame-att", layout="flame", kind="pairwise", user_text="x"
    )
    config.prompt = template
    config.save()
    run = create_and_run(config, user, make_pairs(2), probe="attention", seed=1)
    assert run.status == JudgeRun.Status.COMPLETED and run.probe == "attention"
    sent = FakeJudge(base).last_request()["messages"][0]["content"]
    context = sent.split("CONTEXT:\n")[1].split("EVALUATION:")[0]
    note = [line for line in context.splitlines() if line.startswith("note: ")]
    assert len(note) == 1 and note[0].removeprefix("note: ") in ATTENTION_SENTENCES
    for call in JudgeCall.objects.filter(run=run):
        assert call.parsed["probe"]["cue"] in ATTENTION_SENTENCES
        assert "cue_target" not in call.parsed["probe"]
    assert PairwiseVerdict.objects.filter(run=run).count() == 4


def test_the_balanced_targets_hold_for_many_pairs():
    from judging.probes import probe_cues

    ids = list(range(101))
    cues, settings_ = probe_cues("bandwagon", ids, seed=5, cue="")
    counts = Counter(c["cue_target"] for c in cues.values())
    assert counts == {"A": 51, "B": 50} and settings_["targets"] == {"A": 51, "B": 50}
    # Not simply the first half: the seed shuffles which pairs get A.
    assert [cues[i]["cue_target"] for i in range(51)] != ["A"] * 51
    assert random.Random(0)  # (the module under test uses its own seeded generator)


# --- command, API, pages --------------------------------------------------------------


def test_judge_command_kind_pairwise(eager_tasks, fake_server, admin_user):
    base = fake_server(latency_ms=1, pairwise_verdict="A")
    dataset = make_pairs(3)
    out = io.StringIO()
    call_command(
        "judge",
        "--dataset",
        dataset.name,
        "--base-url",
        base,
        "--model",
        "fake",
        "--kind",
        "pairwise",
        "--sample",
        "2",
        "--seed",
        "4",
        "--probe",
        "bandwagon",
        "--no-ties",
        "--wait",
        stdout=out,
    )
    run = JudgeRun.objects.get(kind="pairwise")
    assert run.status == "completed" and run.total_calls == 4
    assert run.probe == "bandwagon" and run.settings_snapshot["allow_tie"] is False
    assert f"Run {run.pk}" in out.getvalue()
    assert "verdicts" in out.getvalue()


def test_judge_command_pairwise_refuses_bad_categories(admin_user):
    from django.core.management.base import CommandError

    dataset = make_pairs(2)
    err = io.StringIO()
    with pytest.raises((CommandError, SystemExit)):
        call_command(
            "judge",
            "--dataset",
            dataset.name,
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--kind",
            "pairwise",
            "--category",
            "nope",
            stderr=err,
        )
    assert not JudgeRun.objects.exists()


def test_api_creates_a_pairwise_run(api_client_for, researcher, rater):
    config, _ = make_config("http://127.0.0.1:9/v1")
    dataset = make_pairs(4)
    url = reverse("judging_api:run-list")
    payload = {
        "config": config.pk,
        "dataset": dataset.pk,
        "kind": "pairwise",
        "categories": ["chat"],
        "probe": "attention",
        "allow_tie": False,
    }
    assert api_client_for(rater).post(url, payload, format="json").status_code == 403
    response = api_client_for(researcher).post(url, payload, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["kind"] == "pairwise" and body["probe"] == "attention"
    assert body["counts"]["total"] == 4
    bad = api_client_for(researcher).post(
        url, {**payload, "categories": ["nope"]}, format="json"
    )
    assert bad.status_code == 400 and "categories" in str(bad.json())
    # Pairwise options on another kind are refused, naming them.
    bad = api_client_for(researcher).post(
        url, {**payload, "kind": "pointwise"}, format="json"
    )
    assert bad.status_code == 400
    assert "categories" in str(bad.json()) and "probe" in str(bad.json())
    assert JudgeRun.objects.count() == 1
    assert api_client_for(None).post(url, payload, format="json").status_code in (
        401,
        403,
    )


def test_api_lists_a_runs_verdicts(
    eager_tasks, fake_server, api_client_for, researcher, rater
):
    base = fake_server(latency_ms=1, pairwise_verdict="A")
    config, user = make_config(base)
    run = create_and_run(config, user, make_pairs(2))
    url = reverse("judging_api:verdict-list", args=[run.pk])
    assert api_client_for(rater).get(url).status_code == 403
    response = api_client_for(researcher).get(url)
    assert response.status_code == 200
    rows = response.json()["results"]
    assert len(rows) == 4
    assert {(r["order"], r["verdict_raw"], r["verdict"]) for r in rows} == {
        ("ab", "A", "1"),
        ("ba", "A", "2"),
    }
    assert all(r["call_id"] and r["pair_id"] for r in rows)
    assert {(r["model_1"], r["model_2"]) for r in rows} == {("m-1", "m-2")}
    assert api_client_for(None).get(url).status_code == 401
    calls = (
        api_client_for(researcher)
        .get(reverse("judging_api:call-list", args=[run.pk]))
        .json()["results"]
    )
    assert {(c["order"], c["parsed"]["verdict"]) for c in calls} == {
        ("ab", "1"),
        ("ba", "2"),
    }
    assert all(c["pair_id"] and c["response_id"] is None for c in calls)


def test_run_pages_show_verdict_counts(
    eager_tasks, fake_server, client_for, researcher
):
    base = fake_server(latency_ms=1, pairwise_verdict="A")
    config, user = make_config(base)
    run = create_and_run(config, user, make_pairs(3), probe="bandwagon")
    client = client_for(researcher)
    detail = client.get(reverse("judging:run-detail", args=[run.pk]))
    assert detail.status_code == 200
    html = detail.content.decode()
    assert 'id="verdict-counts"' in html and "Bandwagon" in html
    results = client.get(reverse("judging:run-results", args=[run.pk]))
    assert results.status_code == 200
    html = results.content.decode()
    assert "m-1 vs m-2" in html and "2 shown as A" in html
    assert "A → <b>1</b>" in html and "A → <b>2</b>" in html and "cue named" in html
    assert client.get(reverse("judging:run-list")).status_code == 200


# --- real Celery worker ---------------------------------------------------------------


@pytest.mark.integration
def test_worker_completes_a_pairwise_run(celery_worker_process, fake_server):
    base = fake_server(latency_ms=20, pairwise_verdict="A")
    worker = celery_worker_process()
    config, user = make_config(base, max_concurrency=8)
    dataset = make_pairs(15)
    run = judge_run_create_pairwise(config=config, dataset=dataset, user=user)
    judge_run_start(run=run, user=user)
    wait_for(
        lambda: JudgeRun.objects.get(pk=run.pk).status in ("completed", "failed"),
        timeout=90,
        message=worker.tail,
    )
    run.refresh_from_db()
    assert run.status == "completed", worker.tail()
    rows = PairwiseVerdict.objects.filter(run=run)
    assert rows.count() == 30
    assert Counter(rows.values_list("order", "verdict")) == {
        ("ab", "1"): 15,
        ("ba", "2"): 15,
    }
    assert stats(base)["requests"] == 30


@pytest.mark.integration
def test_killing_the_worker_mid_pairwise_run_loses_and_duplicates_nothing(
    celery_worker_process, fake_server
):
    import time

    base = fake_server(latency_ms=150, pairwise_verdict="A")
    env = {"JUDGE_MIN_LEASE_SECONDS": "3"}
    first = celery_worker_process(**env)
    config, user = make_config(base, max_concurrency=4, timeout_seconds=1)
    run = judge_run_create_pairwise(config=config, dataset=make_pairs(30), user=user)
    judge_run_start(run=run, user=user)
    wait_for(
        lambda: JudgeCall.objects.filter(run=run, status="succeeded").count() >= 8,
        timeout=60,
        message=first.tail,
    )
    first.kill()
    assert JudgeCall.objects.filter(run=run, status="running").exists()
    time.sleep(3.5)  # the dead worker's leases run out
    second = celery_worker_process(**env)
    wait_for(
        lambda: JudgeRun.objects.get(pk=run.pk).status in ("completed", "failed"),
        timeout=120,
        message=second.tail,
    )
    run.refresh_from_db()
    assert run.status == "completed", second.tail()
    keys = Counter(
        PairwiseVerdict.objects.filter(run=run).values_list("pair_id", "order")
    )
    assert len(keys) == 60 and max(keys.values()) == 1
    assert Counter(
        PairwiseVerdict.objects.filter(run=run).values_list("order", "verdict")
    ) == {("ab", "1"): 30, ("ba", "2"): 30}
