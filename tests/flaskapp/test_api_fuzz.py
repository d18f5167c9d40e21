"""Fuzz the whole API from its own OpenAPI schema: no request makes a 500.

Schemathesis generates valid (positive) and invalid (negative) requests for every
operation of ``/api/schema/``, sent in-process to the WSGI application, as each role
(admin, researcher, rater, anonymous; tokens from `tests.factories.api_token`). Checks:
`not_a_server_error` and `response_schema_conformance`. Half of the examples use the
ids of a small seeded dataset, campaign and run, so the operations reach real objects.

Bounded and stable: a few examples per operation, mode and role, derandomized, no
deadline, no shrinking. Nothing leaves the machine: the seeded judge is a baseline (no
endpoint), and Celery publishes to an in-memory broker that no worker reads, so a run
the fuzzer starts (with whatever base URL it made up) is never executed.

Run with ``-s`` to see the figures: requests per role, refused (4xx), 5xx.
"""

from __future__ import annotations

import collections

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from annotation.services.campaign_spec import (
    CampaignSpec,
    PairPolicy,
)
from tests.factories import (
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    api_token,
)

EXAMPLES = int(
    __import__("os").environ.get("FUZZ_EXAMPLES", "5")
)  # per operation, generation mode, role and id choice
ROLES = ("admin", "researcher", "rater", "anonymous")
CHECKS = [not_a_server_error, response_schema_conformance]


@pytest.fixture
def celery_in_memory():
    """Tasks go to an in-memory broker nobody consumes (and never run eagerly).

    The write URL, not `broker_url`: Celery prefers $CELERY_BROKER_URL over the latter.
    """
    from flaskapp.celery import app

    saved = (app.conf.broker_write_url, app.conf.task_always_eager, app._pool)
    app.conf.broker_write_url = "memory://"
    app.conf.task_always_eager = False
    app._pool = None
    app.amqp._producer_pool = None
    with app.connection_for_write() as connection:
        assert connection.transport_cls == "memory"
    yield
    # The memory pool is left open: kombu keeps one per URL for the whole process.
    app.conf.broker_write_url, app.conf.task_always_eager, app._pool = saved
    app.amqp._producer_pool = None


@pytest.fixture
def seeded(transactional_db):
    """Users per role and a small dataset with a campaign, a pairwise campaign, a
    baseline judge and its run; returns (users by role, known path ids)."""
    from annotation.services.campaigns import campaign_create
    from annotation.services.rating import assignment_next
    from judging.services.configs import judge_config_create
    from judging.services.runs import judge_run_create

    users = {
        role: UserFactory(username=f"fuzz-{role}", role=role)
        for role in ROLES
        if role != "anonymous"
    }
    first = InstructionFactory()
    dataset = first.dataset
    instructions = [first, InstructionFactory(dataset=dataset)]
    for instruction in instructions:
        for model in ("model-a", "model-b"):
            ResponseFactory(instruction=instruction, model_name=model)
    campaign = campaign_create(
        spec=CampaignSpec(
            name="fuzz campaign", dataset=dataset, raters=[users["rater"]]
        ),
        created_by=users["researcher"],
    )
    pairwise = campaign_create(
        spec=CampaignSpec(
            name="fuzz pairwise",
            dataset=dataset,
            raters=[users["rater"]],
            pairs=PairPolicy(),
        ),
        created_by=users["researcher"],
    )
    served = assignment_next(campaign=campaign, rater=users["rater"])
    config = judge_config_create(
        user=users["researcher"], name="fuzz baseline", backend="baseline_length"
    )
    run = judge_run_create(config=config, dataset=dataset, user=users["researcher"])
    known = {
        "dataset_id": dataset.pk,
        "dataset_name": dataset.name,
        "instruction_id": first.pk,
        "campaign_id": campaign.pk,
        "rubric_id": dataset.rubric_id,
        "config_id": config.pk,
        "run_id": run.pk,
        "assignment_id": served.assignment.pk if served.assignment else 1,
        "job_id": 1,
    }
    known["pairwise_campaign_id"] = pairwise.pk
    return users, known


def _fuzz_test(strategy, label, headers, tally, failures):
    """A Hypothesis test sending `EXAMPLES` cases of `strategy`; failed checks are
    collected in `failures`, not raised, so every operation gets its turn."""

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case):
        response = case.call(headers=headers)
        tally["requests"] += 1
        if 400 <= response.status_code < 500:
            tally["refused"] += 1
        if response.status_code >= 500:
            tally["5xx"] += 1
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (Exception, BaseExceptionGroup) as exc:  # collect, go on
            failures.append(f"{label} {response.status_code}: {exc}"[:900])

    return run


def _fuzz_operation(operation, headers, known, tally, failures):
    path_names = [p.name for p in operation.path_parameters]  # e.g. ["dataset_id"]
    fixed = {n: known[n] for n in path_names if n in known}
    if "pairwise" in operation.path and "campaign_id" in fixed:
        fixed["campaign_id"] = known["pairwise_campaign_id"]
    # Negative cases with every path parameter fixed must negate a query parameter or
    # the body; an operation with neither has none to generate.
    negatable = bool(operation.query or operation.body) or len(fixed) < len(path_names)
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        if mode == GenerationMode.NEGATIVE and not negatable:
            continue  # nothing in the request can be made invalid
        choices = [None]
        if fixed and (mode == GenerationMode.POSITIVE or negatable):
            choices.append(fixed)
        label = f"{operation.label} [{mode.value}]"
        for path_parameters in choices:
            strategy = operation.as_strategy(
                generation_mode=mode, path_parameters=path_parameters
            )

            run = _fuzz_test(strategy, label, headers, tally, failures)
            try:
                run()
            except Exception as exc:  # generation itself failed: report it
                failures.append(f"{label} not run: {exc!r}")


def test_api_fuzz_finds_no_server_error(seeded, celery_in_memory, capsys):
    from flaskapp.wsgi import application

    users, known = seeded
    schema = schemathesis.openapi.from_wsgi(
        "/api/schema/",
        application,
        headers={"Authorization": f"Token {api_token(users['researcher'])}"},
    )
    operations = [result.ok() for result in schema.get_all_operations()]
    # Revoking tokens (DELETE /api/auth/token(s)/) ends the role's token: last.
    operations.sort(key=lambda op: op.path.startswith("/api/auth/"))
    figures: dict[str, collections.Counter] = {}
    failures: list[str] = []
    for role in ROLES:
        headers = {}
        if role != "anonymous":
            headers["Authorization"] = f"Token {api_token(users[role])}"
        tally: collections.Counter = collections.Counter()
        for operation in operations:
            _fuzz_operation(operation, headers, known, tally, failures)
        figures[role] = tally
    with capsys.disabled():
        for failure in failures:
            print(f"\nFUZZ FAILURE {failure}")
        print(f"\nAPI fuzz: {len(operations)} operations, {EXAMPLES} examples each")
        for role, tally in figures.items():
            print(
                f"  {role:<10} requests {tally['requests']:>5}  refused (4xx) "
                f"{tally['refused']:>5}  5xx {tally['5xx']:>3}"
            )
    assert len(operations) > 50
    assert all(t["requests"] > len(operations) for t in figures.values())
    assert failures == [], "\n".join(failures[:40])
