"""Pairwise campaign pages: researchers' pages (home, new, detail, status) and the
raters' comparison page (next, submit, skip).

Each view: the happy path, every refused role, bad input, the htmx fragment; for the
rater's page blindness (shown order, no model names unless shown, no other rater's
work) and a query count that does not grow with the dataset.
"""

from __future__ import annotations

import pytest
from django.urls import resolve, reverse

from annotation import services
from annotation.models import (
    Assignment,
    Campaign,
    HumanPreference,
    PreferencePair,
)
from annotation.services.campaign_spec import (
    CampaignSpec,
)
from annotation.services.campaigns import campaign_create, campaign_set_status
from annotation.services.pairwise import pairwise_next
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    campaign_from_fields,
)

HX = {"HTTP_HX_REQUEST": "true"}


def make_dataset(n_instructions=3, models=("model-alpha", "model-beta")):
    dataset = DatasetFactory()
    for i in range(n_instructions):
        inst = InstructionFactory(
            dataset=dataset,
            text=f"Question {i}: why is the sky blue?",
            reference_answer="REFERENCE-TEXT-42",
        )
        for j, model in enumerate(models):
            ResponseFactory(
                instruction=inst, model_name=model, text=f"RESPONSE-TEXT-{i}-{j}"
            )
    return dataset


def make_campaign(researcher, raters, dataset=None, **options):
    return campaign_from_fields(
        name=options.pop("name", "Pair campaign"),
        dataset=dataset or make_dataset(),
        created_by=researcher,
        raters=list(raters),
        pairwise=True,
        **options,
    )


def serve(campaign, rater):
    return pairwise_next(campaign=campaign, rater=rater).assignment


def assert_login_redirect(response):
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


@pytest.fixture
def campaign(researcher, rater, other_rater):
    return make_campaign(researcher, [rater, other_rater])


@pytest.fixture
def outsider(db):
    return UserFactory(username="pair-outsider", role="rater")


# --- Researchers' pages --------------------------------------------------------------------


def test_home_lists_campaigns_for_researchers_and_own_work_for_raters(
    client_for, researcher, rater, outsider, campaign
):
    html = client_for(researcher).get(reverse("annotation:pairwise-home")).content
    html = html.decode()
    assert "Pair campaign" in html and "0 of 3" in html
    assert reverse("annotation:pairwise-campaign-detail", args=[campaign.pk]) in html
    as_rater = client_for(rater).get(reverse("annotation:pairwise-home"))
    assert as_rater.status_code == 200
    assert reverse("annotation:pairwise-next", args=[campaign.pk]) in (
        as_rater.content.decode()
    )
    assert reverse("annotation:pairwise-campaign-new") not in as_rater.content.decode()
    other = client_for(outsider).get(reverse("annotation:pairwise-home")).content
    assert b"Pair campaign" not in other


def test_the_raters_rate_page_sends_pairwise_campaigns_here(
    client_for, rater, campaign
):
    html = client_for(rater).get(reverse("annotation:rate-home")).content.decode()
    assert reverse("annotation:pairwise-next", args=[campaign.pk]) in html
    assert f'href="{reverse("annotation:rate-next", args=[campaign.pk])}"' not in html


def test_home_refuses_users_without_a_role_and_anonymous(client_for, no_role_user):
    url = reverse("annotation:pairwise-home")
    assert client_for(no_role_user).get(url).status_code == 403
    assert_login_redirect(client_for(None).get(url))


def test_campaign_new_offers_the_datasets_models_and_skills(client_for, researcher):
    dataset = make_dataset()
    url = reverse("annotation:pairwise-campaign-new")
    html = client_for(researcher).get(url, {"dataset": dataset.pk}).content.decode()
    assert 'value="model-alpha"' in html and 'value="factuality"' in html
    fragment = client_for(researcher).get(url, {"dataset": dataset.pk}, **HX)
    body = fragment.content.decode()
    assert body.lstrip().startswith('<div id="pairwise-options"')
    assert "<nav" not in body


def test_campaign_new_creates_the_campaign(client_for, researcher, rater, other_rater):
    dataset = make_dataset()
    response = client_for(researcher).post(
        reverse("annotation:pairwise-campaign-new"),
        {
            "name": "Baseline study",
            "dataset": dataset.pk,
            "pair_mode": "baseline",
            "baseline_model": "model-alpha",
            "skills": ["factuality", "readability"],
            "overlap": 2,
            "overlap_percent": 100,
            "lock_ttl_minutes": 20,
            "raters": [rater.pk, other_rater.pk],
            "guidelines": "Prefer *correct* answers.",
        },
    )
    campaign = Campaign.objects.get(name="Baseline study")
    assert response.status_code == 302
    assert response.url == reverse(
        "annotation:pairwise-campaign-detail", args=[campaign.pk]
    )
    assert campaign.kind == Campaign.Kind.PAIRWISE
    assert campaign.items.count() == 3
    assert set(campaign.chosen_skills.values_list("key", flat=True)) == {
        "factuality",
        "readability",
    }
    assert set(campaign.raters.all()) == {rater, other_rater}
    assert not campaign.show_model_names


def test_campaign_new_bad_input_shows_errors_and_creates_nothing(
    client_for, researcher
):
    dataset = make_dataset()
    response = client_for(researcher).post(
        reverse("annotation:pairwise-campaign-new"),
        {
            "name": "",
            "dataset": dataset.pk,
            "pair_mode": "baseline",
            "overlap": 1,
            "overlap_percent": 100,
            "lock_ttl_minutes": 30,
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "is empty" in html
    assert "is required in baseline mode" in html
    # A number outside its bounds (flaskapp.bounds) is refused by the form itself.
    out_of_bounds = client_for(researcher).post(
        reverse("annotation:pairwise-campaign-new"),
        {"name": "x", "dataset": dataset.pk, "pair_mode": "all_pairs", "overlap": 51},
    )
    assert out_of_bounds.status_code == 400
    assert "less than or equal to 50" in out_of_bounds.content.decode()
    assert not Campaign.objects.exists() and not PreferencePair.objects.exists()


def test_campaign_new_refuses_raters_and_anonymous(client_for, rater, no_role_user):
    url = reverse("annotation:pairwise-campaign-new")
    assert client_for(rater).get(url).status_code == 403
    assert client_for(no_role_user).get(url).status_code == 403
    assert client_for(rater).post(url, {"name": "x"}).status_code == 403
    assert_login_redirect(client_for(None).get(url))
    assert not Campaign.objects.exists()


def test_campaign_detail_shows_progress_per_rater(
    client_for, researcher, rater, campaign
):
    a = serve(campaign, rater)
    services.pairwise.pairwise_submit(assignment_id=a.pk, rater=rater, label="A")
    serve(campaign, rater)
    url = reverse("annotation:pairwise-campaign-detail", args=[campaign.pk])
    html = client_for(researcher).get(url).content.decode()
    assert "rater-user" in html
    assert "all pairs" in html  # where the pairs came from
    assert '1 <span class="of">/ 3</span>' in html  # votes submitted / needed
    fragment = client_for(researcher).get(url, **HX)
    assert fragment.status_code == 200
    assert (
        fragment.content.decode().lstrip().startswith('<section id="pairwise-progress"')
    )


def test_campaign_detail_stops_polling_once_closed(client_for, researcher, campaign):
    campaign_set_status(campaign=campaign, status="closed", user=researcher)
    url = reverse("annotation:pairwise-campaign-detail", args=[campaign.pk])
    assert client_for(researcher).get(url, **HX).status_code == 286


def test_campaign_detail_refuses_raters_and_is_404_for_pointwise(
    client_for, researcher, rater, campaign
):
    url = reverse("annotation:pairwise-campaign-detail", args=[campaign.pk])
    assert client_for(rater).get(url).status_code == 403
    assert client_for(rater).get(url, **HX).status_code == 403
    assert_login_redirect(client_for(None).get(url))
    pointwise = campaign_create(
        spec=CampaignSpec(name="pw", dataset=make_dataset()), created_by=researcher
    )
    other = reverse("annotation:pairwise-campaign-detail", args=[pointwise.pk])
    assert client_for(researcher).get(other).status_code == 404


def test_campaign_status_pauses_and_refuses_raters(
    client_for, researcher, rater, campaign
):
    url = reverse("annotation:pairwise-campaign-status", args=[campaign.pk])
    assert client_for(rater).post(url, {"status": "paused"}).status_code == 403
    assert_login_redirect(client_for(None).post(url, {"status": "paused"}))
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.ACTIVE
    response = client_for(researcher).post(url, {"status": "paused"})
    assert response.status_code == 302
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.PAUSED
    assert client_for(researcher).get(url).status_code == 405


# --- Raters: compare ---------------------------------------------------------------------


def test_next_shows_the_instruction_and_both_responses_in_the_shown_order(
    client_for, rater, campaign
):
    response = client_for(rater).get(
        reverse("annotation:pairwise-next", args=[campaign.pk])
    )
    assert response.status_code == 200
    html = response.content.decode()
    a = Assignment.objects.get(rater=rater)
    pair = a.pair
    first, second = (
        (pair.response_1, pair.response_2)
        if a.shown_order == "12"
        else (pair.response_2, pair.response_1)
    )
    assert pair.instruction.text in html
    assert html.index(first.text) < html.index(second.text)
    assert html.index('id="response-a"') < html.index(first.text)
    assert html.index('id="response-b"') < html.index(second.text)
    assert 'name="label"' in html and 'value="tie"' in html
    assert "REFERENCE-TEXT-42" in html  # shown by default
    # Blind: no model name, no other rater's work.
    assert "model-alpha" not in html and "model-beta" not in html


def test_next_resumes_the_same_pair_on_reload(client_for, rater, campaign):
    client = client_for(rater)
    url = reverse("annotation:pairwise-next", args=[campaign.pk])
    client.get(url)
    client.get(url)
    assert Assignment.objects.filter(rater=rater).count() == 1


def test_next_htmx_returns_only_the_panel(client_for, rater, campaign):
    response = client_for(rater).get(
        reverse("annotation:pairwise-next", args=[campaign.pk]), **HX
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="pairwise-panel"')
    assert "<nav" not in html


def test_model_names_and_per_skill_rows_when_the_campaign_asks(
    client_for, researcher, rater
):
    campaign = make_campaign(
        researcher,
        [rater],
        show_model_names=True,
        show_reference=False,
        skills=["factuality"],
    )
    html = (
        client_for(rater)
        .get(reverse("annotation:pairwise-next", args=[campaign.pk]))
        .content.decode()
    )
    assert "model-alpha" in html and "model-beta" in html
    assert 'name="skill-factuality"' in html
    assert "REFERENCE-TEXT-42" not in html


def test_next_renders_markdown_safely(client_for, researcher, rater):
    dataset = DatasetFactory()
    inst = InstructionFactory(dataset=dataset, text="Say **hi**")
    ResponseFactory(
        instruction=inst, model_name="x", text="<script>alert(1)</script> *em*"
    )
    ResponseFactory(instruction=inst, model_name="y", text="[bad](javascript:alert(1))")
    campaign = make_campaign(researcher, [rater], dataset=dataset)
    html = (
        client_for(rater)
        .get(reverse("annotation:pairwise-next", args=[campaign.pk]))
        .content.decode()
    )
    assert "<strong>hi</strong>" in html and "<em>em</em>" in html
    assert "<script>alert" not in html
    assert "javascript:alert" not in html


def test_next_is_404_for_anyone_outside_the_campaign(
    client_for, researcher, admin_user, no_role_user, outsider, campaign
):
    url = reverse("annotation:pairwise-next", args=[campaign.pk])
    for user in (outsider, researcher, admin_user, no_role_user):
        assert client_for(user).get(url).status_code == 404
    assert_login_redirect(client_for(None).get(url))
    assert not Assignment.objects.exists()


def test_next_of_a_pointwise_campaign_is_404(client_for, researcher, rater):
    pointwise = campaign_create(
        spec=CampaignSpec(name="pw", dataset=make_dataset(), raters=[rater]),
        created_by=researcher,
    )
    url = reverse("annotation:pairwise-next", args=[pointwise.pk])
    assert client_for(rater).get(url).status_code == 404


def test_next_says_when_nothing_is_left_and_when_others_hold_locks(
    client_for, researcher, rater, other_rater
):
    campaign = make_campaign(
        researcher, [rater, other_rater], dataset=make_dataset(n_instructions=1)
    )
    serve(campaign, other_rater)
    url = reverse("annotation:pairwise-next", args=[campaign.pk])
    html = client_for(rater).get(url).content.decode()
    assert "being compared by others" in html and "Check again" in html
    a = serve(campaign, other_rater)
    services.pairwise.pairwise_submit(assignment_id=a.pk, rater=other_rater, label="B")
    html = client_for(rater).get(url).content.decode()
    assert "You are done" in html and "Check again" not in html


def test_submit_stores_the_label_in_the_original_numbering(client_for, rater, campaign):
    a = serve(campaign, rater)
    Assignment.objects.filter(pk=a.pk).update(shown_order="21")
    response = client_for(rater).post(
        reverse("annotation:pairwise-submit", args=[a.pk]),
        {"label": "A", "rationale": "A is clearer", "active_seconds": "7"},
    )
    assert response.status_code == 302
    assert response.url == reverse("annotation:pairwise-next", args=[campaign.pk]) + (
        "?saved=1"
    )
    pref = HumanPreference.objects.get(assignment=a)
    assert pref.label == "2" and pref.shown_order == "21"
    assert pref.rationale == "A is clearer"
    a.refresh_from_db()
    assert a.status == Assignment.Status.SUBMITTED and a.active_seconds == 7


def test_submit_with_htmx_returns_the_next_pair(client_for, rater, campaign):
    a = serve(campaign, rater)
    response = client_for(rater).post(
        reverse("annotation:pairwise-submit", args=[a.pk]), {"label": "tie"}, **HX
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="pairwise-panel"')
    assert "Saved." in html
    nxt = Assignment.objects.get(rater=rater, status=Assignment.Status.SERVED)
    assert f'data-assignment-id="{nxt.pk}"' in html and nxt.pk != a.pk


def test_submit_bad_input_names_the_question_and_saves_nothing(
    client_for, researcher, rater
):
    campaign = make_campaign(researcher, [rater], skills=["factuality"])
    a = serve(campaign, rater)
    url = reverse("annotation:pairwise-submit", args=[a.pk])
    response = client_for(rater).post(url, {"label": "C"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "&#x27;C&#x27; is not one of A, B or tie" in html
    assert 'id="err-factuality"' in html  # the missing skill answer is marked
    htmx = client_for(rater).post(url, {"skill-factuality": "B"}, **HX)
    assert htmx.status_code == 422
    assert 'id="l-factuality-B" value="B" checked' in htmx.content.decode()
    assert not HumanPreference.objects.exists()


def test_a_double_submit_saves_once(client_for, rater, campaign):
    a = serve(campaign, rater)
    url = reverse("annotation:pairwise-submit", args=[a.pk])
    client = client_for(rater)
    client.post(url, {"label": "A"})
    client.post(url, {"label": "B"})
    assert HumanPreference.objects.filter(assignment=a).count() == 1


def test_skip_with_a_reason_serves_the_next_pair(client_for, rater, campaign):
    a = serve(campaign, rater)
    url = reverse("annotation:pairwise-skip", args=[a.pk])
    empty = client_for(rater).post(url, {"reason": ""}, **HX)
    assert empty.status_code == 422 and "Say why you skip" in empty.content.decode()
    response = client_for(rater).post(url, {"reason": "Not my field"}, **HX)
    assert response.status_code == 200
    a.refresh_from_db()
    assert a.status == Assignment.Status.SKIPPED and a.skip_reason == "Not my field"
    plain = client_for(rater).post(
        reverse(
            "annotation:pairwise-skip",
            args=[Assignment.objects.get(rater=rater, status="served").pk],
        ),
        {"reason": "again"},
    )
    assert plain.status_code == 302


def test_another_raters_assignment_is_404_everywhere(
    client_for, researcher, admin_user, rater, other_rater, outsider, campaign
):
    a = serve(campaign, rater)
    for user in (other_rater, outsider, researcher, admin_user):
        client = client_for(user)
        submit = reverse("annotation:pairwise-submit", args=[a.pk])
        skip = reverse("annotation:pairwise-skip", args=[a.pk])
        assert client.post(submit, {"label": "A"}).status_code == 404
        assert client.post(skip, {"reason": "x"}).status_code == 404
    assert_login_redirect(
        client_for(None).post(
            reverse("annotation:pairwise-submit", args=[a.pk]), {"label": "A"}
        )
    )
    a.refresh_from_db()
    assert a.status == Assignment.Status.SERVED
    assert not HumanPreference.objects.exists()


def test_submit_and_skip_only_accept_post(client_for, rater, campaign):
    a = serve(campaign, rater)
    client = client_for(rater)
    assert (
        client.get(reverse("annotation:pairwise-submit", args=[a.pk])).status_code
        == 405
    )
    assert (
        client.get(reverse("annotation:pairwise-skip", args=[a.pk])).status_code == 405
    )


# Plus one since issue 35: the user's workspace memberships, read once per page.
NEXT_MAX_QUERIES = 17
SUBMIT_MAX_QUERIES = 27


@pytest.mark.parametrize("n_instructions", [2, 30])
def test_next_and_submit_query_counts_are_constant(
    client_for, researcher, rater, django_assert_max_num_queries, n_instructions
):
    campaign = make_campaign(
        researcher,
        [rater],
        dataset=make_dataset(n_instructions=n_instructions),
        skills=["factuality"],
    )
    client = client_for(rater)
    with django_assert_max_num_queries(NEXT_MAX_QUERIES):
        assert (
            client.get(
                reverse("annotation:pairwise-next", args=[campaign.pk])
            ).status_code
            == 200
        )
    a = Assignment.objects.get(rater=rater)
    with django_assert_max_num_queries(SUBMIT_MAX_QUERIES):
        response = client.post(
            reverse("annotation:pairwise-submit", args=[a.pk]),
            {"label": "A", "skill-factuality": "tie"},
            **HX,
        )
    assert response.status_code == 200


@pytest.mark.parametrize("n_campaigns", [1, 5])
def test_home_query_count_is_constant(
    client_for, researcher, rater, django_assert_max_num_queries, n_campaigns
):
    dataset = make_dataset(n_instructions=1)
    for i in range(n_campaigns):
        make_campaign(researcher, [rater], dataset=dataset, name=f"c{i}")
    for user in (researcher, rater):
        client = client_for(user)
        # 10: since issue 37 the rater's cards read the median time per item (the
        # rater's own, else the campaign's): two queries, whatever the campaigns.
        with django_assert_max_num_queries(10):
            response = client.get(reverse("annotation:pairwise-home"))
        assert response.status_code == 200
        assert response.content.decode().count(">c") >= n_campaigns


def test_history_shows_only_own_work_as_shown(
    client_for, researcher, rater, other_rater, outsider
):
    campaign = make_campaign(
        researcher, [rater, other_rater], skills=["factuality"], overlap=2
    )
    mine = serve(campaign, rater)
    Assignment.objects.filter(pk=mine.pk).update(shown_order="21")
    services.pairwise.pairwise_submit(
        assignment_id=mine.pk,
        rater=rater,
        label="A",
        skill_labels={"factuality": "tie"},
        rationale="MY-RATIONALE",
    )
    theirs = serve(campaign, other_rater)
    services.pairwise.pairwise_submit(
        assignment_id=theirs.pk,
        rater=other_rater,
        label="B",
        skill_labels={"factuality": "B"},
        rationale="THEIR-RATIONALE",
    )
    skipped = serve(campaign, rater)
    services.pairwise.pairwise_skip(
        assignment_id=skipped.pk, rater=rater, reason="MY-SKIP"
    )
    url = reverse("annotation:pairwise-history", args=[campaign.pk])
    response = client_for(rater).get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert "MY-RATIONALE" in html and "MY-SKIP" in html
    assert "<strong>A better</strong>" in html  # as shown, not "2"
    assert "factuality: tie" in html
    assert "THEIR-RATIONALE" not in html
    for user in (outsider, researcher):
        assert client_for(user).get(url).status_code == 404
    assert_login_redirect(client_for(None).get(url))


@pytest.mark.parametrize(
    ("compare", "rate"),
    [
        ("pairwise-next", "rate-next"),
        ("pairwise-history", "rate-history"),
        ("pairwise-submit", "assignment-submit"),
        ("pairwise-skip", "assignment-skip"),
        ("pairwise-amend", "assignment-review"),
    ],
)
def test_compare_routes_are_the_rater_loops_views_for_pairs(compare, rate):
    # Issue 33: one rater loop for both item kinds; the route says which kind.
    pair_route = resolve(reverse(f"annotation:{compare}", args=[7]))
    rate_route = resolve(reverse(f"annotation:{rate}", args=[7]))
    assert pair_route.func is rate_route.func
    assert pair_route.kwargs["kind"] == "pairwise"
    assert rate_route.kwargs["kind"] == "pointwise"


def test_history_breadcrumb_names_the_page_and_times_are_absolute(
    client_for, researcher, rater
):
    # issue 37, defect 14: the breadcrumb ended in a raw slug ("mine"), and this
    # history gave absolute times where My ratings gave relative ones
    campaign = make_campaign(researcher, [rater], skills=["factuality"])
    mine = serve(campaign, rater)
    services.pairwise.pairwise_submit(
        assignment_id=mine.pk, rater=rater, label="A", skill_labels={"factuality": "A"}
    )
    url = reverse("annotation:pairwise-history", args=[campaign.pk])
    html = client_for(rater).get(url).content.decode()
    crumbs = html.split('class="breadcrumbs"', 1)[1].split("</div>", 1)[0]
    assert crumbs.endswith("My comparisons") and "mine" not in crumbs
    assert "<time datetime=" in html and " ago" not in html
