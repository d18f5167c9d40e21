"""Data builders shared by the judging page, API, import, command and suggestion tests.

Built with factories and the services; runs with calls in given states are written
directly (the engine is not what these tests are about).
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from annotation.models import Dataset, Response, Skill
from judging.models import JudgeCall, JudgeConfig, JudgeRun, JudgeScore
from judging.services.configs import judge_config_create
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    grant_endpoint_rights,
)

KEY_ENV = "JUDGE_KEY_FLASK_TEST"  # a declared name (JUDGE_KEY_*)
SECRET = (
    "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"  # a fake key value, never to be shown
)


def make_dataset(
    *, name: str = "judge-set", instructions: int = 3, models=("alpha", "beta")
) -> Dataset:
    """A dataset of `instructions` instructions (external ids "1", "2", ...), each with
    the default skills (comprehension, factuality, readability) and one response per
    model."""
    dataset = DatasetFactory(name=name)
    for i in range(instructions):
        instruction = InstructionFactory(
            dataset=dataset,
            external_id=str(i + 1),
            text=f"Question {i + 1}: explain something in detail.",
            position=i,
        )
        for model in models:
            ResponseFactory(
                instruction=instruction,
                model_name=model,
                text=f"{model} answers question {i + 1}.",
            )
    return dataset


def make_config(user, **fields) -> JudgeConfig:
    """A config made by `user` through the service; `user` is given endpoint rights
    first (tests/factories.grant_endpoint_rights), as whoever configures an endpoint
    needs them."""
    grant_endpoint_rights(user)
    values = {
        "name": "gpt-judge",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "judge-model",
        "api_key_env": KEY_ENV,
        "price_input_per_m": Decimal("2.5"),
        "price_output_per_m": Decimal("10"),
    }
    values.update(fields)
    return judge_config_create(user=user, **values)


def make_run(
    *,
    dataset: Dataset,
    config: JudgeConfig | None = None,
    status: str = JudgeRun.Status.RUNNING,
    kind: str = JudgeRun.Kind.POINTWISE,
    started_minutes_ago: float = 5,
    snapshot: dict | None = None,
    **fields,
) -> JudgeRun:
    now = timezone.now()
    return JudgeRun.objects.create(
        config=config,
        dataset=dataset,
        name=fields.pop("name", "test run"),
        kind=kind,
        status=status,
        started_at=now - timedelta(minutes=started_minutes_ago),
        settings_snapshot=snapshot
        if snapshot is not None
        else {
            "backend": "openai",
            "base_url": "http://127.0.0.1:9/v1",
            "model": "judge-model",
            "api_key_env": KEY_ENV,
            "is_dev_server": False,
        },
        **fields,
    )


def add_calls(run: JudgeRun, statuses: list[str], *, finished_seconds_ago: float = 10):
    """One call per status, over the run's dataset responses (cycling samples), with
    tokens and cost on finished calls and a score per instruction skill on successes."""
    responses = list(
        Response.objects.filter(instruction__dataset=run.dataset).order_by("pk")
    )
    now = timezone.now()
    skills = list(Skill.objects.filter(rubric_id=run.dataset.rubric_id)[:2])
    calls = []
    for i, status in enumerate(statuses):
        response = responses[i % len(responses)]
        finished = status in (JudgeCall.Status.SUCCEEDED, JudgeCall.Status.FAILED)
        call = JudgeCall.objects.create(
            run=run,
            response=response,
            sample_index=i // len(responses),
            status=status,
            input_tokens=100 if finished else 0,
            output_tokens=20 if finished else 0,
            cost=Decimal("0.0005") if finished else 0,
            latency_ms=800 if finished else None,
            attempts=1 if finished else 0,
            raw_output=f"Feedback for call {i}. Scores: 4" if finished else "",
            error="HTTP 500 from the judge: upstream exploded"
            if status == JudgeCall.Status.FAILED
            else "",
            error_kind="server" if status == JudgeCall.Status.FAILED else "",
            started_at=now - timedelta(seconds=finished_seconds_ago + 1),
            finished_at=now - timedelta(seconds=finished_seconds_ago)
            if finished
            else None,
        )
        if status == JudgeCall.Status.SUCCEEDED:
            JudgeScore.objects.bulk_create(
                JudgeScore(
                    run=run,
                    call=call,
                    response=response,
                    skill=skill,
                    sample_index=call.sample_index,
                    score=4 if n == 0 else None,
                    rationale="Clear and correct.",
                )
                for n, skill in enumerate(skills)
            )
        calls.append(call)
    run.total_calls = len(statuses)
    run.save(update_fields=["total_calls"])
    return calls
