"""Metadata annotation runs and the admin's decisions on their suggestions: the
services and the suggestions page."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from annotation.models import Instruction, InstructionSkill
from flaskapp.errors import DomainError
from judging.models import JudgeCall, JudgeRun, MetadataSuggestion
from judging.services.runs import judge_run_create
from judging.services.suggestions import (
    suggestion_accept,
    suggestion_accept_all,
    suggestion_reject,
)
from tests.judging.data import make_config, make_dataset, make_run

pytestmark = pytest.mark.django_db

LAYOUT_NAV = '<nav aria-label="Main">'
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def dataset(db):
    return make_dataset(instructions=3, models=("alpha",))


@pytest.fixture
def config(researcher):
    return make_config(researcher)


@pytest.fixture
def metadata_run(dataset, config):
    return make_run(
        dataset=dataset,
        config=config,
        kind=JudgeRun.Kind.METADATA,
        status=JudgeRun.Status.COMPLETED,
    )


def suggest(run, external_id="1", **fields) -> MetadataSuggestion:
    instruction = Instruction.objects.get(dataset=run.dataset, external_id=external_id)
    return MetadataSuggestion.objects.create(run=run, instruction=instruction, **fields)


def skill_keys(instruction) -> list[str]:
    return list(
        InstructionSkill.objects.filter(instruction=instruction)
        .order_by("rank")
        .values_list("skill__key", flat=True)
    )


# --- Creating annotation runs -------------------------------------------------------------


def test_create_annotation_run_makes_one_pending_call_per_instruction(
    dataset, config, researcher
):
    run = judge_run_create(
        config=config, dataset=dataset, user=researcher, kind="metadata"
    )
    assert run.kind == JudgeRun.Kind.METADATA
    assert run.status == JudgeRun.Status.PENDING
    assert run.total_calls == 3
    calls = list(run.calls.order_by("pk"))
    assert [c.instruction.external_id for c in calls] == ["1", "2", "3"]
    assert all(c.response_id is None for c in calls)
    assert all(c.sample_index == 0 for c in calls)
    assert {c.status for c in calls} == {JudgeCall.Status.PENDING}
    assert run.settings_snapshot["kind"] == "metadata"
    assert run.settings_snapshot["api_key_env"] == config.api_key_env
    assert run.estimate["calls"] == 3
    assert run.estimate["input_tokens"] > 0


def test_create_checklist_run_with_an_instruction_limit(dataset, config, researcher):
    run = judge_run_create(
        config=config,
        dataset=dataset,
        user=researcher,
        kind="checklist",
        instruction_limit=2,
    )
    assert run.kind == JudgeRun.Kind.CHECKLIST
    assert run.calls.count() == 2


def test_create_annotation_run_refuses_bad_kind_limit_and_baselines(
    dataset, config, researcher
):
    with pytest.raises(DomainError) as caught:
        judge_run_create(
            config=config,
            dataset=dataset,
            user=researcher,
            kind="metadata",
            instruction_limit=0,
        )
    assert {p.field for p in caught.value.problems} == {"limit"}
    with pytest.raises(DomainError) as caught:
        judge_run_create(
            config=config, dataset=dataset, user=researcher, kind="metadata-ish"
        )
    assert [p.field for p in caught.value.problems] == ["kind"]
    assert "unknown kind 'metadata-ish'" in str(caught.value)
    baseline = make_config(
        researcher, name="rouge", backend="baseline_rouge", base_url=""
    )
    with pytest.raises(DomainError) as caught:
        judge_run_create(
            config=baseline, dataset=dataset, user=researcher, kind="metadata"
        )
    assert caught.value.problems[0].field == "config"
    assert JudgeRun.objects.count() == 0


def test_raters_cannot_create_annotation_runs(dataset, config, rater):
    with pytest.raises(PermissionDenied):
        judge_run_create(config=config, dataset=dataset, user=rater, kind="metadata")


# --- Accepting and rejecting --------------------------------------------------------------


def test_accept_updates_domains_difficulty_and_skill_ranks(metadata_run, admin_user):
    suggestion = suggest(
        metadata_run,
        domains=["coding", "math"],
        difficulty=5,
        skills=["logical_correctness", "Logical Efficiency", "readability"],
    )
    accepted = suggestion_accept(suggestion=suggestion, user=admin_user)
    assert accepted.status == MetadataSuggestion.Status.ACCEPTED
    assert accepted.decided_by == admin_user
    assert accepted.decided_at is not None
    instruction = Instruction.objects.get(pk=suggestion.instruction_id)
    assert instruction.domains == ["coding", "math"]
    assert instruction.difficulty == 5
    # Replaced, ranked in the suggested order (names or keys both resolve).
    assert skill_keys(instruction) == [
        "logical_correctness",
        "logical_efficiency",
        "readability",
    ]
    # Idempotent.
    assert (
        suggestion_accept(suggestion=suggestion, user=admin_user).status == "accepted"
    )


def test_accept_a_checklist_suggestion(dataset, config, admin_user):
    run = make_run(dataset=dataset, config=config, kind=JudgeRun.Kind.CHECKLIST)
    suggestion = suggest(
        run,
        checklist=[
            {"skill": "factuality", "question": "Does it cite the right year?"},
            "Is the answer under 100 words?",
        ],
    )
    suggestion_accept(suggestion=suggestion, user=admin_user)
    instruction = Instruction.objects.get(pk=suggestion.instruction_id)
    assert instruction.checklist == [
        {"skill": "factuality", "question": "Does it cite the right year?"},
        {"skill": None, "question": "Is the answer under 100 words?"},
    ]
    # Nothing else was touched.
    assert instruction.difficulty == 3
    assert skill_keys(instruction) == ["comprehension", "factuality", "readability"]


def test_reject_leaves_the_instruction_unchanged(metadata_run, admin_user):
    suggestion = suggest(
        metadata_run, domains=["coding"], difficulty=1, skills=["conciseness"]
    )
    before = Instruction.objects.get(pk=suggestion.instruction_id)
    rejected = suggestion_reject(suggestion=suggestion, user=admin_user)
    assert rejected.status == MetadataSuggestion.Status.REJECTED
    after = Instruction.objects.get(pk=suggestion.instruction_id)
    assert (after.domains, after.difficulty) == (before.domains, before.difficulty)
    assert skill_keys(after) == ["comprehension", "factuality", "readability"]
    with pytest.raises(DomainError):
        suggestion_accept(suggestion=suggestion, user=admin_user)


def test_a_non_admin_cannot_accept_or_reject(metadata_run, researcher, rater):
    suggestion = suggest(metadata_run, difficulty=1)
    for user in (researcher, rater):
        with pytest.raises(PermissionDenied):
            suggestion_accept(suggestion=suggestion, user=user)
        with pytest.raises(PermissionDenied):
            suggestion_reject(suggestion=suggestion, user=user)
    suggestion.refresh_from_db()
    assert suggestion.status == MetadataSuggestion.Status.PROPOSED
    assert Instruction.objects.get(pk=suggestion.instruction_id).difficulty == 3


def test_accept_refuses_an_unknown_skill_and_changes_nothing(metadata_run, admin_user):
    suggestion = suggest(metadata_run, difficulty=1, skills=["telepathy"])
    with pytest.raises(DomainError) as caught:
        suggestion_accept(suggestion=suggestion, user=admin_user)
    assert caught.value.problems[0].field == "skills"
    assert "instruction 1" in str(caught.value)
    assert Instruction.objects.get(pk=suggestion.instruction_id).difficulty == 3
    suggestion.refresh_from_db()
    assert suggestion.status == MetadataSuggestion.Status.PROPOSED


def test_accept_all_is_all_or_nothing(metadata_run, admin_user):
    good = suggest(metadata_run, "1", difficulty=1)
    bad = suggest(metadata_run, "2", domains=["astrology"])
    with pytest.raises(DomainError):
        suggestion_accept_all(run=metadata_run, user=admin_user)
    assert Instruction.objects.get(pk=good.instruction_id).difficulty == 3
    bad.delete()
    suggest(metadata_run, "3", difficulty=2, skills=["harmlessness"])
    assert suggestion_accept_all(run=metadata_run, user=admin_user) == 2
    assert (
        Instruction.objects.get(
            external_id="1", dataset=metadata_run.dataset
        ).difficulty
        == 1
    )
    third = Instruction.objects.get(external_id="3", dataset=metadata_run.dataset)
    assert (third.difficulty, skill_keys(third)) == (2, ["harmlessness"])
    assert not MetadataSuggestion.objects.filter(status="proposed").exists()


# --- The suggestions page ------------------------------------------------------------------


def test_suggestions_page_shows_current_and_suggested_metadata(
    client_for, admin_user, metadata_run
):
    suggest(metadata_run, domains=["coding"], difficulty=5, skills=["conciseness"])
    response = client_for(admin_user).get(
        reverse("judging:run-suggestions", args=[metadata_run.pk])
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "Coding" in body and "Math" in body  # suggested vs current domain
    assert "Conciseness" in body and "Comprehension" in body
    assert "Accept all 1 proposed" in body
    assert ">Accept<" in body


def test_researchers_see_suggestions_without_decision_buttons(
    client_for, researcher, metadata_run
):
    suggest(metadata_run, difficulty=5)
    response = client_for(researcher).get(
        reverse("judging:run-suggestions", args=[metadata_run.pk])
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "Only an admin can accept" in body
    assert ">Accept<" not in body


def test_suggestions_page_refuses_raters_and_anonymous(client_for, rater, metadata_run):
    url = reverse("judging:run-suggestions", args=[metadata_run.pk])
    assert client_for(rater).get(url).status_code == 403
    anonymous = client_for(None).get(url)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


def test_accept_post_applies_the_suggestion_and_redirects(
    client_for, admin_user, metadata_run
):
    suggestion = suggest(metadata_run, difficulty=5)
    url = reverse("judging:suggestion-accept", args=[metadata_run.pk, suggestion.pk])
    response = client_for(admin_user).post(url)
    assert response.status_code == 302
    assert Instruction.objects.get(pk=suggestion.instruction_id).difficulty == 5


def test_accept_with_htmx_returns_the_updated_row_only(
    client_for, admin_user, metadata_run
):
    suggestion = suggest(metadata_run, difficulty=5)
    url = reverse("judging:suggestion-accept", args=[metadata_run.pk, suggestion.pk])
    response = client_for(admin_user).post(url, **HX)
    assert response.status_code == 200
    body = response.content.decode()
    assert body.strip().startswith(f'<tr id="suggestion-{suggestion.pk}"')
    assert LAYOUT_NAV not in body
    assert "Accepted" in body


def test_reject_post_and_bad_decision_with_htmx(client_for, admin_user, metadata_run):
    suggestion = suggest(metadata_run, difficulty=5)
    client = client_for(admin_user)
    reject = reverse("judging:suggestion-reject", args=[metadata_run.pk, suggestion.pk])
    assert client.post(reject).status_code == 302
    suggestion.refresh_from_db()
    assert suggestion.status == "rejected"
    accept = reverse("judging:suggestion-accept", args=[metadata_run.pk, suggestion.pk])
    refused = client.post(accept, **HX)
    # Swapped in (htmx ignores 4xx bodies): the row says why nothing changed.
    assert refused.status_code == 200
    assert 'role="alert"' in refused.content.decode()
    assert "was rejected" in refused.content.decode()


def test_non_admins_cannot_post_decisions(client_for, researcher, rater, metadata_run):
    suggestion = suggest(metadata_run, difficulty=5)
    for user in (researcher, rater):
        for name in ("suggestion-accept", "suggestion-reject"):
            url = reverse(f"judging:{name}", args=[metadata_run.pk, suggestion.pk])
            assert client_for(user).post(url).status_code == 403
        url = reverse("judging:suggestion-accept-all", args=[metadata_run.pk])
        assert client_for(user).post(url).status_code == 403
    assert Instruction.objects.get(pk=suggestion.instruction_id).difficulty == 3
    anonymous = client_for(None).post(
        reverse("judging:suggestion-accept", args=[metadata_run.pk, suggestion.pk])
    )
    assert anonymous.status_code == 302


def test_accept_all_post(client_for, admin_user, metadata_run):
    suggest(metadata_run, "1", difficulty=5)
    suggest(metadata_run, "2", difficulty=4)
    response = client_for(admin_user).post(
        reverse("judging:suggestion-accept-all", args=[metadata_run.pk]), follow=True
    )
    assert "Accepted 2 suggestions" in response.content.decode()
    assert MetadataSuggestion.objects.filter(status="accepted").count() == 2


def test_suggestion_filter_fragment(client_for, admin_user, metadata_run):
    suggest(metadata_run, "1", difficulty=5)
    accepted = suggest(metadata_run, "2", difficulty=4, status="accepted")
    response = client_for(admin_user).get(
        reverse("judging:run-suggestions", args=[metadata_run.pk]),
        {"status": "accepted"},
        **HX,
    )
    body = response.content.decode()
    assert LAYOUT_NAV not in body
    assert f"suggestion-{accepted.pk}" in body
    assert body.count('<tr id="suggestion-') == 1
