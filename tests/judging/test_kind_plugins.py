"""Judge task kinds are plug-ins (`judging.kinds`): a kind defined in one module -
here a toy sixth kind defined in this test module only - is created, estimated,
offered, executed against the real local fake OpenAI server, parsed, stored and
shown through the generic code; the registry agrees with the model's choices and
the lists that spell it out; and no generic module of `judging/` branches on a kind
(an AST scan that fails on a planted branch)."""

from __future__ import annotations

import ast
import io
import time
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Response
from bench.kinds import KIND_KEYS, kind_branches, kind_lists, survey
from flaskapp.errors import DomainError, Problem
from judging import kinds, parsing, prompts
from judging.api.serializers import JudgeRunCreateInputSerializer
from judging.forms import RunForm
from judging.kinds import CallContext, Selection, Sizes, TaskKind
from judging.models import JudgeCall, JudgeConfig, JudgeRun
from judging.selectors.criteria import VALUE_KINDS
from judging.selectors.item_scores import SCORE_KINDS
from judging.services.configs import judge_config_create
from judging.services.estimates import judge_run_estimate
from judging.services.runs import judge_run_create, judge_run_start
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    grant_endpoint_rights,
)
from tests.judging import FakeJudge

ROOT = Path(__file__).resolve().parents[2]

# --- The toy sixth kind: this module is all it needs ----------------------------------------

QUESTION = "Is the response longer than twelve words?"
LABELS = ("yes", "no")


class LengthCheckKind(TaskKind):
    """Asks the judge, per response, a yes/no question about its length and keeps
    the answer on the call (`parsed["long"]`)."""

    key = "length_check"
    label = "Length check"
    form_label = "Ask whether each response is longer than twelve words"
    takes = frozenset({"models"})
    baseline_refusal = "a baseline judge cannot answer a question"

    def problems(self, *, config, dataset, options) -> list[Problem]:
        if options.models and not set(options.models) <= self._models(dataset):
            return [Problem("not a model of the dataset", field="models")]
        return []

    @staticmethod
    def _models(dataset) -> set[str]:
        return set(
            Response.objects.filter(instruction__dataset=dataset).values_list(
                "model_name", flat=True
            )
        )

    def select(self, *, dataset, options, examples, config=None) -> Selection:
        responses = Response.objects.filter(instruction__dataset=dataset)
        if options.models:
            responses = responses.filter(model_name__in=options.models)
        ids = list(responses.order_by("pk").values_list("pk", flat=True))
        return Selection(items=responses, targets=ids)

    def sizes(self, *, config, selection, extra_chars=0) -> Sizes:
        n = len(selection.targets)
        return Sizes(calls=n, items=n, input_chars=400 * n, output_tokens=20)

    def default_name(self, options) -> str:
        return "length check"

    def calls(self, *, config, options, selection):
        return ({"response_id": pk, "sample_index": 0} for pk in selection.targets)

    def load_contexts(self, claim):
        calls = JudgeCall.objects.filter(pk__in=claim.ids).select_related(
            "response__instruction"
        )
        contexts = []
        for call in calls.order_by("pk"):
            messages = prompts.render_classification(
                call.response.instruction.text,
                call.response.text,
                question=QUESTION,
                labels=LABELS,
                layout="flame",
            )
            contexts.append(
                CallContext(
                    call_id=call.pk,
                    token=claim.token,
                    response_id=call.response_id,
                    sample_index=call.sample_index,
                    skills=[],
                    messages=messages,
                    cache_key=claim.cache_key(
                        claim.snapshot, messages, call.sample_index, None
                    ),
                    kind=self.key,
                    instruction_id=call.response.instruction_id,
                )
            )
        return contexts

    def parse(self, ctx, result, text) -> None:
        label, rationale = parsing.parse_classification(text, labels=list(LABELS))
        result.parsed = {"long": label, "rationale": rationale}

    def page_context(self, run) -> dict:
        answers = JudgeCall.objects.filter(
            run=run, status=JudgeCall.Status.SUCCEEDED
        ).values_list("parsed__long", flat=True)
        return {"length_answers": dict(Counter(answers))}


@pytest.fixture
def toy_kind():
    kind = kinds.register(LengthCheckKind())
    yield kind
    kinds.unregister(kind.key)


# --- Data -----------------------------------------------------------------------------------


@pytest.fixture
def eager_tasks(settings):
    from flaskapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.JUDGE_DRIVERS_PER_RUN = 1
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.01
    settings.JUDGE_BACKOFF_MAX_SECONDS = 0.05
    settings.REDIS_URL = ""  # in-process limiter: no Redis needed
    yield
    app.conf.task_always_eager = before


def make_dataset(models=("m-a", "m-b")):
    dataset = DatasetFactory()
    for i in range(3):
        instruction = InstructionFactory(dataset=dataset)
        for model in models:
            words = "word " * (5 + 10 * i)
            ResponseFactory(instruction=instruction, model_name=model, text=words)
    return dataset


def make_config(base_url: str, **fields) -> tuple[JudgeConfig, object]:
    user = UserFactory(username=f"kinds-{time.monotonic_ns()}", role="researcher")
    grant_endpoint_rights(user)
    config = judge_config_create(
        user=user,
        name=f"judge-{time.monotonic_ns()}",
        base_url=base_url,
        model="fake-judge",
        output_mode="text",
        max_concurrency=4,
        timeout_seconds=5,
        price_input_per_m=1,
        price_output_per_m=2,
        **fields,
    )
    return config, user


# --- A kind in one module, end to end ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_kind_defined_in_one_module_runs_end_to_end(
    toy_kind, eager_tasks, fake_server, client_for
):
    base = fake_server(latency_ms=1, classification_label="yes")
    config, user = make_config(base)
    dataset = make_dataset()

    estimate = judge_run_estimate(
        config=config, dataset=dataset, kind="length_check", models=["m-a"]
    )
    run = judge_run_create(
        config=config, dataset=dataset, user=user, kind="length_check", models=["m-a"]
    )
    assert run.kind == "length_check" and run.status == JudgeRun.Status.PENDING
    assert run.total_calls == 3 == estimate["calls"]
    assert run.estimate == estimate and estimate["input_tokens"] == 300
    assert "length check" in run.name

    judge_run_start(run=run, user=user)  # eager: driven inline to the end
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    calls = list(JudgeCall.objects.filter(run=run).order_by("pk"))
    assert [c.status for c in calls] == ["succeeded"] * 3
    assert {c.response.model_name for c in calls} == {"m-a"}
    assert [c.parsed["long"] for c in calls] == ["yes"] * 3
    assert all(c.input_tokens > 0 and c.prompt_hash for c in calls)
    # The fake judge was asked the toy's question, in the FLAMe layout.
    sent = FakeJudge(base).last_request()["messages"][0]["content"]
    assert (
        sent.startswith("INSTRUCTIONS:\nTask type: classification") and QUESTION in sent
    )

    # The run pages show it like any run, with the kind's own extras.
    client = client_for(user)
    page = client.get(reverse("judging:run-detail", args=[run.pk]))
    assert page.status_code == 200 and page.context["length_answers"] == {"yes": 3}
    results = client.get(reverse("judging:run-results", args=[run.pk]))
    assert results.status_code == 200
    assert len(results.context["page"].object_list) == 3


@pytest.mark.django_db(transaction=True)
def test_a_judge_answer_the_kind_cannot_parse_is_re_asked_then_failed(
    toy_kind, eager_tasks, fake_server
):
    # The fake judge answers "undecided": not a label, re-asked, then failed.
    base = fake_server(latency_ms=1, malformed=1.0)
    config, user = make_config(base, max_parse_retries=1)
    run = judge_run_create(
        config=config, dataset=make_dataset(models=("m-a",)), user=user,
        kind="length_check",
    )  # fmt: skip
    judge_run_start(run=run, user=user)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.FAILED
    call = JudgeCall.objects.filter(run=run).first()
    assert call.status == "failed" and call.error_kind == "parse"
    assert call.parse_failures == 2 and "could not parse" in call.error


@pytest.mark.django_db
def test_the_form_the_api_and_the_command_offer_a_registered_kind(toy_kind):
    entry = ("length_check", LengthCheckKind.form_label)
    form = RunForm(configs=JudgeConfig.objects.none(), datasets=None)
    assert entry in form.fields["kind"].choices
    serializer = JudgeRunCreateInputSerializer(
        data={"config": 1, "dataset": 1, "kind": "length_check"}
    )
    assert serializer.is_valid(), serializer.errors
    from judging.management.commands.judge import Command

    parser = Command().create_parser("manage.py", "judge")
    kind_action = next(a for a in parser._actions if a.dest == "kind")
    assert "length_check" in kind_action.choices
    kinds.unregister("length_check")
    assert not JudgeRunCreateInputSerializer(
        data={"config": 1, "dataset": 1, "kind": "length_check"}
    ).is_valid()
    kinds.register(toy_kind)


@pytest.mark.django_db
def test_options_a_kind_does_not_take_are_refused_naming_who_takes_them(
    toy_kind, researcher
):
    config = JudgeConfig.objects.create(name="j", base_url="", model="")
    with pytest.raises(DomainError) as caught:
        judge_run_create(
            config=config,
            dataset=DatasetFactory(),
            user=researcher,
            kind="length_check",
            probe="attention",
            max_calls=4,
        )
    problems = {p.field: p.message for p in caught.value.problems}
    assert problems == {
        "probe": "only for kind 'pairwise'",
        "max_calls": "only for kind 'pointwise' or 'critique'",
    }
    assert not JudgeRun.objects.exists()


@pytest.mark.django_db
def test_the_judge_command_refuses_pairwise_flags_for_the_toy_kind(toy_kind):
    from django.core.management.base import CommandError

    dataset = DatasetFactory()
    with pytest.raises(CommandError, match="--probe need --kind pairwise"):
        call_command(
            "judge", "--dataset", dataset.name, "--baseline", "rouge",
            "--kind", "length_check", "--probe", "attention",
            stdout=io.StringIO(), stderr=io.StringIO(),
        )  # fmt: skip
    assert not JudgeRun.objects.exists()


# --- The registry ---------------------------------------------------------------------------


def test_get_names_the_known_kinds_and_register_refuses_a_taken_key():
    with pytest.raises(kinds.UnknownTaskKind) as caught:
        kinds.get("pointwsie")
    assert "unknown judge task kind 'pointwsie'" in str(caught.value)
    assert "pointwise, critique, metadata, checklist, pairwise" in str(caught.value)
    assert kinds.find("pointwsie") is None and kinds.find(None) is None
    with pytest.raises(ValueError, match="already registered"):
        kinds.register(kinds.get("pointwise"))


def test_the_form_order_and_what_each_kind_is():
    assert [key for key, _ in kinds.choices()] == [
        "pointwise",
        "critique",
        "metadata",
        "checklist",
        "pairwise",
    ]
    assert kinds.default().key == "pointwise"
    assert kinds.keys(annotates_instructions=True) == ("metadata", "checklist")
    assert kinds.keys(creatable=False) == ("imported", "derived")


def test_the_registry_agrees_with_the_models_and_the_lists_that_spell_it_out():
    from analysis.exports import training

    assert set(kinds.REGISTRY) == set(JudgeRun.Kind.values)
    assert {k.label for k in kinds.all_kinds()} == set(JudgeRun.Kind.labels)
    assert set(SCORE_KINDS) == set(kinds.keys(writes_scores=True))
    assert set(VALUE_KINDS) == set(kinds.keys(reads_values=True))
    assert set(training.KINDS) == set(kinds.training_tasks())
    assert set(kinds.REGISTRY) <= KIND_KEYS  # the scan knows every key


# --- No generic module branches on a kind ----------------------------------------------------


# Why each of these may still compare with a kind: they sit below `judging.kinds`
# (which imports them) and spell out a registry fact the test above keeps equal, or
# are the FLAMe format's own vocabulary of task types.
ALLOWED = {
    "judging/selectors/criteria.py",  # VALUE_KINDS (selectors are below kinds)
    "judging/prompts/base.py",  # FLAME_TASK_KINDS: the FLAMe layout's task types
}


def test_no_generic_module_of_judging_branches_on_a_kind():
    found = survey(ROOT)["branches"]
    branching = {path: lines for path, lines in found.items() if path not in ALLOWED}
    assert branching == {}


def test_the_scan_finds_a_planted_branch_and_list():
    source = (
        "def f(run, kind):\n"
        "    if run.kind == JudgeRun.Kind.PAIRWISE:\n"
        "        return 1\n"
        "    if kind in ('metadata', 'checklist'):\n"
        "        return 2\n"
        "    if kind != 'critique':\n"
        "        return 3\n"
        "    return run.kind in ANNOTATION_KINDS\n"
        "KINDS = [JudgeRun.Kind.POINTWISE, JudgeRun.Kind.CRITIQUE]\n"
    )
    tree = ast.parse(source)
    assert kind_branches(tree) == [2, 4, 6, 8]
    assert kind_lists(tree) == [4, 9]
    # Not a branch: a status, a skill kind, a word that is not a run kind.
    clean = ast.parse(
        "x = run.status == JudgeRun.Status.RUNNING\n"
        "y = skill.kind == SkillKind.CATEGORICAL\n"
        "z = kind == 'share'\n"
        "w = kind not in PromptTemplate.Kind.values\n"
    )
    assert kind_branches(clean) == [] and kind_lists(clean) == []


def test_every_kind_partial_exists_in_a_known_slot():
    from django.template.loader import get_template

    slots = {"badge", "settings", "prompt", "targets", "page", "estimate"}
    for kind in kinds.all_kinds():
        assert set(kind.templates) <= slots, kind
        for path in kind.templates.values():
            assert get_template(path).origin.name.endswith(path)
