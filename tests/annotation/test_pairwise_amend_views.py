"""The rater's amend page of a pairwise vote (`annotation:pairwise-amend`) and its link
from the rater's history: the vote preselected as the rater saw it, a save through
`pairwise_amend` stored in the original numbering, another rater's vote a 404, a closed
campaign read-only and refused, bad input naming the question, the htmx fragment."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Assignment, Campaign, HumanPreference
from annotation.services.pairwise import pairwise_skip, pairwise_submit
from tests.annotation.test_pairwise_views import (
    HX,
    assert_login_redirect,
    make_campaign,
    serve,
)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(researcher, rater, other_rater):
    return make_campaign(
        researcher, [rater, other_rater], skills=["factuality"], overlap=2
    )


@pytest.fixture
def outsider_rater(db):
    return UserFactory(username="amend-outsider", role="rater")


def submitted(campaign, rater, *, order="21", label="A", skill="tie", why="FIRST"):
    """A vote of `rater`, shown in `order`, answered (as shown) `label` overall and
    `skill` for factuality."""
    assignment = serve(campaign, rater)
    Assignment.objects.filter(pk=assignment.pk).update(shown_order=order)
    pairwise_submit(
        assignment_id=assignment.pk,
        rater=rater,
        label=label,
        skill_labels={"factuality": skill},
        rationale=why,
    )
    return assignment


def amend_url(assignment) -> str:
    return reverse("annotation:pairwise-amend", args=[assignment.pk])


def test_amend_page_preselects_the_vote_as_shown_and_saves_the_change(
    client_for, rater, campaign
):
    vote = submitted(campaign, rater)  # "A" as shown in order 21 = response 2
    assert HumanPreference.objects.get(assignment=vote).label == "2"
    client = client_for(rater)
    page = client.get(amend_url(vote))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="l-overall-A" value="A" checked' in html
    assert 'id="l-factuality-tie" value="tie" checked' in html
    assert ">FIRST</textarea>" in html
    assert "Editable while the campaign is open" in html
    assert "data-pairwise-form" in html  # the compare page's keys (pairwise.js)
    # The amend page keeps no draft, and its help does not promise one.
    assert "data-draft" not in html
    assert "kept as a draft" not in html

    response = client.post(
        amend_url(vote),
        {"label": "B", "skill-factuality": "A", "rationale": "SECOND"},
    )
    assert response.status_code == 302 and response.url == amend_url(vote)
    preference = HumanPreference.objects.get(assignment=vote)
    # B as shown in order 21 is response 1; A is response 2.
    assert preference.label == "1"
    assert preference.skill_labels == {"factuality": "2"}
    assert preference.rationale == "SECOND"
    vote.refresh_from_db()
    assert vote.updated_at is not None
    again = client.get(amend_url(vote)).content.decode()
    assert 'id="l-overall-B" value="B" checked' in again
    assert "Your changed vote is saved." in again
    assert HumanPreference.objects.filter(assignment=vote).count() == 1


def test_history_links_each_submitted_vote_to_its_amend_page(
    client_for, rater, campaign
):
    vote = submitted(campaign, rater)
    skipped = serve(campaign, rater)
    pairwise_skip(assignment_id=skipped.pk, rater=rater, reason="MY-SKIP")
    history = reverse("annotation:pairwise-history", args=[campaign.pk])
    html = client_for(rater).get(history).content.decode()
    assert f'href="{amend_url(vote)}"' in html
    assert f'href="{amend_url(skipped)}"' not in html
    # A skipped pair has no vote to amend.
    assert client_for(rater).get(amend_url(skipped)).status_code == 404


def test_another_raters_vote_is_404_and_unchanged(
    client_for, rater, other_rater, outsider_rater, campaign, researcher
):
    theirs = submitted(campaign, other_rater, label="B", why="THEIRS")
    for user in (rater, outsider_rater, researcher):
        client = client_for(user)
        assert client.get(amend_url(theirs)).status_code == 404
        assert client.post(amend_url(theirs), {"label": "A"}).status_code == 404
    assert HumanPreference.objects.get(assignment=theirs).rationale == "THEIRS"
    assert_login_redirect(client_for(None).get(amend_url(theirs)))


def test_closed_campaign_shows_the_vote_read_only_and_refuses_a_change(
    client_for, rater, campaign
):
    vote = submitted(campaign, rater)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CLOSED)
    client = client_for(rater)
    history = reverse("annotation:pairwise-history", args=[campaign.pk])
    assert f'href="{amend_url(vote)}"' not in client.get(history).content.decode()
    page = client.get(amend_url(vote)).content.decode()
    assert "Final: the campaign is closed" in page
    assert 'value="A" checked disabled' in page and "Save changes" not in page
    response = client.post(amend_url(vote), {"label": "B", "skill-factuality": "B"})
    assert response.status_code == 400
    assert "this campaign is closed" in response.content.decode().lower()
    assert HumanPreference.objects.get(assignment=vote).label == "2"


def test_paused_campaign_still_takes_an_amendment(client_for, rater, campaign):
    vote = submitted(campaign, rater)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)
    response = client_for(rater).post(
        amend_url(vote), {"label": "tie", "skill-factuality": "tie"}
    )
    assert response.status_code == 302
    assert HumanPreference.objects.get(assignment=vote).label == "tie"


def test_bad_choice_names_the_question_and_changes_nothing(client_for, rater, campaign):
    vote = submitted(campaign, rater)
    client = client_for(rater)
    response = client.post(amend_url(vote), {"label": "C", "rationale": "KEPT"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "&#x27;C&#x27; is not one of A, B or tie" in html
    assert 'id="err-overall"' in html
    # The missing skill answer is marked at its question; the posted text is kept.
    assert 'id="err-factuality"' in html and ">KEPT</textarea>" in html
    preference = HumanPreference.objects.get(assignment=vote)
    assert (preference.label, preference.rationale) == ("2", "FIRST")


def test_htmx_gets_the_panel_saved_or_422_with_the_errors(client_for, rater, campaign):
    vote = submitted(campaign, rater)
    client = client_for(rater)
    page = client.get(amend_url(vote), **HX).content.decode()
    assert page.lstrip().startswith('<section id="pairwise-panel"')
    assert "<nav" not in page

    bad = client.post(amend_url(vote), {"skill-factuality": "B"}, **HX)
    assert bad.status_code == 422
    html = bad.content.decode()
    assert html.lstrip().startswith('<section id="pairwise-panel"')
    assert 'id="err-overall"' in html
    assert 'id="l-factuality-B" value="B" checked' in html

    ok = client.post(amend_url(vote), {"label": "B", "skill-factuality": "B"}, **HX)
    assert ok.status_code == 200
    html = ok.content.decode()
    assert html.lstrip().startswith('<section id="pairwise-panel"')
    assert "Your changed vote is saved." in html
    assert 'id="l-overall-B" value="B" checked' in html
    assert HumanPreference.objects.get(assignment=vote).label == "1"


def test_a_pair_still_being_compared_goes_to_the_compare_page(
    client_for, rater, campaign
):
    served = serve(campaign, rater)
    response = client_for(rater).get(amend_url(served))
    assert response.status_code == 302
    assert response.url == reverse("annotation:pairwise-next", args=[campaign.pk])


def test_amend_accepts_only_get_and_post(client_for, rater, campaign):
    vote = submitted(campaign, rater)
    assert client_for(rater).put(amend_url(vote)).status_code == 405
