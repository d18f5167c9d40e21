"""A rater taken out of a campaign, or whose rater role is removed, is refused at every
rating operation (pages and API, pointwise and pairwise) with a 403 naming the reason;
their live locks go back to the pool with a recorded reason, whichever way they were
removed; their submitted scores stay, count as before and are marked on the campaign
page. (The 409 on a changed resubmit and the bound on active_seconds are tested with
the APIs: test_api_rating.py, test_pairwise_api.py.)"""

from __future__ import annotations

import threading
import time

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection, transaction
from django.db.models import F
from django.urls import reverse
from rest_framework.test import APIClient

from analysis.exports.scores import score_rows
from annotation import membership, selectors
from annotation.items.pairwise import map_shown_label
from annotation.models import Assignment, CampaignItem, HumanPreference, HumanScore
from annotation.selectors import assignment_skills
from annotation.services.campaign_spec import (
    CampaignSpec,
    DisplayPolicy,
    PairPolicy,
)
from annotation.services.campaigns import campaign_create, campaign_set_raters
from annotation.services.pairwise import pairwise_next, pairwise_submit
from annotation.services.rating import assignment_next, rating_submit
from annotation.services.serving import REMOVED_NOTE, ROLE_REMOVED_NOTE
from flaskapp import roles
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    api_token,
)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(
    autouse=True,
    params=["sql", "orm"] if connection.vendor == "postgresql" else ["orm"],
)
def rating_path(request, settings):
    """Both implementations of serve and submit (raw SQL on PostgreSQL, the ORM)."""
    settings.RATING_FAST_SQL = request.param == "sql"
    return request.param


def make_dataset(n_instructions=3):
    dataset = DatasetFactory()
    for i in range(n_instructions):
        instruction = InstructionFactory(dataset=dataset)
        for model in ("model-alpha", "model-beta"):
            ResponseFactory(instruction=instruction, model_name=model, text=f"T{i}")
    return dataset


def scores_for(assignment, value=4) -> dict:
    return {s.key: value for s in assignment_skills(assignment=assignment)}


def pointwise_campaign(researcher, raters, name="removal"):
    return campaign_create(
        spec=CampaignSpec(name=name, dataset=make_dataset(), raters=raters),
        created_by=researcher,
    )


@pytest.fixture
def pointwise(researcher, rater, other_rater):
    """A campaign where `rater` submitted one response and holds a lock on another."""
    campaign = pointwise_campaign(researcher, [rater, other_rater])
    done = assignment_next(campaign=campaign, rater=rater).assignment
    rating_submit(assignment_id=done.pk, rater=rater, scores=scores_for(done))
    held = assignment_next(campaign=campaign, rater=rater).assignment
    assert held.status == Assignment.Status.SERVED
    return campaign, done, held


@pytest.fixture
def pairwise(researcher, rater, other_rater):
    """The same for pairs: one submitted, one held."""
    campaign = campaign_create(
        spec=CampaignSpec(
            name="removal pairs",
            dataset=make_dataset(),
            skills=["factuality"],
            raters=[rater, other_rater],
            display=DisplayPolicy(show_reference=False),
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    done = pairwise_next(campaign=campaign, rater=rater).assignment
    pairwise_submit(
        assignment_id=done.pk,
        rater=rater,
        label="A",
        skill_labels={"factuality": "A"},
    )
    held = pairwise_next(campaign=campaign, rater=rater).assignment
    assert held.status == Assignment.Status.SERVED
    return campaign, done, held


def rater_group() -> Group:
    return Group.objects.get(name=roles.RATER)


def remove_from_campaign(campaign, rater, researcher):
    others = [u for u in campaign.raters.all() if u.pk != rater.pk]
    campaign_set_raters(campaign=campaign, raters=others, user=researcher)


def remove_role(rater):
    rater.groups.remove(rater_group())
    # The API test client reuses this user object (force_authenticate); a real
    # request loads the user afresh, without the roles cached on the object.
    rater.__dict__.pop("_flask_roles", None)


REMOVALS = ["campaign", "role"]


def remove(how, campaign, rater, researcher) -> tuple[str, str]:
    """Remove `rater` the `how` way; the (message, code) every refusal must carry."""
    if how == "campaign":
        remove_from_campaign(campaign, rater, researcher)
        return membership.REMOVED_FROM_CAMPAIGN, "not_campaign_member"
    remove_role(rater)
    return membership.ROLE_REMOVED, "rater_role_removed"


def token_client(user) -> APIClient:
    """A client that authenticates as a script does: every request reads the user."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token(user)}")
    return client


HTMX = {"HTTP_HX_REQUEST": "true"}


def assert_refused_pages(responses: dict, message: str) -> None:
    got = {name: r.status_code for name, r in responses.items()}
    assert got == {name: 403 for name in responses}, got
    for name, r in responses.items():
        assert message in r.content.decode(), name


def assert_refused_api(responses: dict, message: str, code: str) -> None:
    got = {name: r.status_code for name, r in responses.items()}
    assert got == {name: 403 for name in responses}, got
    for name, r in responses.items():
        assert r.json() == {"detail": message, "code": code}, name


# --- Every operation is refused, with the reason ----------------------------------------


@pytest.mark.parametrize("how", REMOVALS)
def test_pointwise_pages_refuse_a_removed_rater(
    how, pointwise, client_for, rater, researcher
):
    campaign, done, held = pointwise
    client = client_for(rater)
    message, _ = remove(how, campaign, rater, researcher)
    rate_next = reverse("annotation:rate-next", args=[campaign.pk])
    review = reverse("annotation:assignment-review", args=[done.pk])
    submit = reverse("annotation:assignment-submit", args=[held.pk])
    skip = reverse("annotation:assignment-skip", args=[held.pk])
    amend = {f"score-{k}": "2" for k in scores_for(done)}
    answer = {f"score-{k}": "3" for k in scores_for(held)}
    assert_refused_pages(
        {
            "rating page": client.get(rate_next),
            "rating page, htmx": client.get(rate_next, **HTMX),
            "history": client.get(
                reverse("annotation:rate-history", args=[campaign.pk])
            ),
            "review": client.get(review),
            "review of the held one": client.get(
                reverse("annotation:assignment-review", args=[held.pk])
            ),
            "amend": client.post(review, amend),
            "submit": client.post(submit, answer),
            "submit, htmx": client.post(submit, answer, **HTMX),
            "skip": client.post(skip, {"reason": "no"}),
            "skip, htmx": client.post(skip, {"reason": "no"}, **HTMX),
        },
        message,
    )
    assert set(
        HumanScore.objects.filter(assignment=done).values_list("score", flat=True)
    ) == {4}
    assert not HumanScore.objects.filter(assignment=held).exists()
    held.refresh_from_db()
    assert held.status == Assignment.Status.EXPIRED and held.skip_reason == ""
    # The rater's list of campaigns no longer offers it.
    home = client.get(reverse("annotation:rate-home")).content.decode()
    assert campaign.name not in home


@pytest.mark.parametrize("how", REMOVALS)
@pytest.mark.parametrize("auth", ["session", "token"])
def test_pointwise_api_refuses_a_removed_rater(
    how, auth, pointwise, api_client_for, rater, researcher
):
    campaign, done, held = pointwise
    message, code = remove(how, campaign, rater, researcher)
    client = token_client(rater) if auth == "token" else api_client_for(rater)
    base = "/api/rate/assignments/"
    assert_refused_api(
        {
            "next": client.post(f"/api/rate/campaigns/{campaign.pk}/next/"),
            "progress": client.get(f"/api/rate/campaigns/{campaign.pk}/progress/"),
            "get submitted": client.get(f"{base}{done.pk}/"),
            "get held": client.get(f"{base}{held.pk}/"),
            "amend": client.put(
                f"{base}{done.pk}/scores/",
                {"scores": scores_for(done, 2)},
                format="json",
            ),
            "submit": client.post(
                f"{base}{held.pk}/submit/",
                {"scores": scores_for(held, 3)},
                format="json",
            ),
            "resubmit": client.post(
                f"{base}{done.pk}/submit/",
                {"scores": scores_for(done, 4)},
                format="json",
            ),
            "skip": client.post(f"{base}{held.pk}/skip/", {"reason": "no"}),
        },
        message,
        code,
    )
    # The rater's own list of campaigns no longer shows it.
    listed = client.get("/api/rate/campaigns/").json()
    assert campaign.pk not in [c["id"] for c in listed["results"]]
    assert not HumanScore.objects.filter(assignment=held).exists()
    assert set(
        HumanScore.objects.filter(assignment=done).values_list("score", flat=True)
    ) == {4}


@pytest.mark.parametrize("how", REMOVALS)
def test_pairwise_pages_refuse_a_removed_rater(
    how, pairwise, client_for, rater, researcher
):
    campaign, done, held = pairwise
    page = client_for(rater)
    message, _ = remove(how, campaign, rater, researcher)
    compare = reverse("annotation:pairwise-next", args=[campaign.pk])
    answer = {"label": "B", "skill-factuality": "B"}
    assert_refused_pages(
        {
            "comparison page": page.get(compare),
            "comparison page, htmx": page.get(compare, **HTMX),
            "history": page.get(
                reverse("annotation:pairwise-history", args=[campaign.pk])
            ),
            "submit": page.post(
                reverse("annotation:pairwise-submit", args=[held.pk]), answer
            ),
            "submit, htmx": page.post(
                reverse("annotation:pairwise-submit", args=[held.pk]), answer, **HTMX
            ),
            "resubmit": page.post(
                reverse("annotation:pairwise-submit", args=[done.pk]), answer
            ),
            "skip": page.post(
                reverse("annotation:pairwise-skip", args=[held.pk]), {"reason": "x"}
            ),
        },
        message,
    )
    stored = HumanPreference.objects.get(assignment=done)
    assert stored.label == pairwise_label(done, "A")
    assert not HumanPreference.objects.filter(assignment=held).exists()


def pairwise_label(assignment, shown: str) -> str:
    return map_shown_label(shown, assignment.shown_order)


@pytest.mark.parametrize("how", REMOVALS)
def test_pairwise_api_refuses_a_removed_rater(
    how, pairwise, api_client_for, rater, researcher
):
    campaign, done, held = pairwise
    api = api_client_for(rater)
    message, code = remove(how, campaign, rater, researcher)
    answer = {"label": "B", "skill_labels": {"factuality": "B"}}
    assert_refused_api(
        {
            "next": api.post(
                reverse("annotation_api:pairwise-next", args=[campaign.pk])
            ),
            "progress": api.get(
                reverse("annotation_api:pairwise-progress", args=[campaign.pk])
            ),
            "submit": api.post(
                reverse("annotation_api:pairwise-submit", args=[held.pk]),
                answer,
                format="json",
            ),
            "resubmit": api.post(
                reverse("annotation_api:pairwise-submit", args=[done.pk]),
                {"label": "A", "skill_labels": {"factuality": "A"}},
                format="json",
            ),
            "skip": api.post(
                reverse("annotation_api:pairwise-skip", args=[held.pk]),
                {"reason": "x"},
                format="json",
            ),
        },
        message,
        code,
    )
    assert not HumanPreference.objects.filter(assignment=held).exists()


def test_people_who_never_worked_in_the_campaign_still_get_a_404(
    pointwise, api_client_for, client_for, researcher, rater
):
    """No campaign's existence leaks: the 403 with a reason is for raters who worked
    in the campaign; an outsider, a researcher, or a rater removed before serving
    anything get the 404 of any campaign they are not in."""
    campaign, _, _ = pointwise
    outsider = UserFactory(username="never-here", role="rater")
    early = UserFactory(username="removed-early", role="rater")
    campaign_set_raters(
        campaign=campaign, raters=[*campaign.raters.all(), early], user=researcher
    )
    remove_from_campaign(campaign, early, researcher)
    for user in (outsider, early, researcher):
        api = api_client_for(user)
        assert api.post(f"/api/rate/campaigns/{campaign.pk}/next/").status_code == 404
        page = client_for(user).get(reverse("annotation:rate-next", args=[campaign.pk]))
        assert page.status_code == 404
    # A pointwise campaign asked for on the pairwise path stays a 404, removed or not.
    remove_role(rater)
    pairwise_next_url = reverse("annotation_api:pairwise-next", args=[campaign.pk])
    assert api_client_for(rater).post(pairwise_next_url).status_code == 404


def test_a_rater_still_in_the_campaign_keeps_working(pointwise, api_client_for, rater):
    campaign, done, held = pointwise
    response = api_client_for(rater).post(
        f"/api/rate/assignments/{held.pk}/submit/",
        {"scores": scores_for(held)},
        format="json",
    )
    assert response.status_code == 200


def test_a_rater_added_back_works_again(pointwise, api_client_for, rater, researcher):
    campaign, done, held = pointwise
    remove_from_campaign(campaign, rater, researcher)
    campaign_set_raters(
        campaign=campaign, raters=[*campaign.raters.all(), rater], user=researcher
    )
    client = api_client_for(rater)
    served = client.post(f"/api/rate/campaigns/{campaign.pk}/next/")
    assert served.status_code == 200 and served.json()["assignment"] is not None
    assert client.get(f"/api/rate/assignments/{done.pk}/").status_code == 200


# --- Locks go back to the pool, with a reason, whichever way the rater is removed -----


@pytest.mark.parametrize(
    "how, note", [("campaign", REMOVED_NOTE), ("role", ROLE_REMOVED_NOTE)]
)
def test_live_locks_are_released_with_the_reason_and_served_to_others(
    how, note, pointwise, rater, other_rater, researcher
):
    campaign, done, held = pointwise
    item = CampaignItem.objects.get(pk=held.item_id)
    before = (item.reserved, item.open_slots)
    remove(how, campaign, rater, researcher)
    held.refresh_from_db()
    item.refresh_from_db()
    assert held.status == Assignment.Status.EXPIRED and held.note == note
    assert held.closed_at is not None
    assert (item.reserved, item.open_slots) == (before[0] - 1, before[1] + 1)
    done.refresh_from_db()
    assert done.status == Assignment.Status.SUBMITTED
    # The released response is served to the other rater.
    served = set()
    while a := assignment_next(campaign=campaign, rater=other_rater).assignment:
        served.add(a.response_id)
        rating_submit(assignment_id=a.pk, rater=other_rater, scores=scores_for(a))
    assert held.response_id in served


@pytest.fixture
def superuser_client(client_for):
    """A staff superuser logged in to the Django admin."""
    return client_for(User.objects.create_superuser("root", "root@example.org", "x"))


def admin_removes_the_rater_role(rater, admin_client):
    """The Django admin's user form, saved without the rater group."""
    url = reverse("admin:auth_user_change", args=[rater.pk])
    assert admin_client.get(url).status_code == 200
    response = admin_client.post(
        url,
        {
            "username": rater.username,
            "is_active": "on",
            "groups": [],
            "user_permissions": [],
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
            "_save": "Save",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]


MEMBERSHIP_REMOVALS = {
    "the service": lambda c, r: remove_from_campaign(c, r, c.created_by),
    "campaign.raters.remove": lambda c, r: c.raters.remove(r),
    "campaign.raters.clear": lambda c, r: c.raters.clear(),
    "campaign.raters.set": lambda c, r: c.raters.set([]),
    "user.rating_campaigns.remove": lambda c, r: r.rating_campaigns.remove(c),
    "user.rating_campaigns.clear": lambda c, r: r.rating_campaigns.clear(),
}
ROLE_REMOVALS = {
    "user.groups.remove": lambda r, admin_client: r.groups.remove(rater_group()),
    "user.groups.clear": lambda r, admin_client: r.groups.clear(),
    "user.groups.set": lambda r, admin_client: r.groups.set([]),
    "group.user_set.remove": lambda r, admin_client: rater_group().user_set.remove(r),
    "group.user_set.clear": lambda r, admin_client: rater_group().user_set.clear(),
    "the rater group deleted": lambda r, admin_client: rater_group().delete(),
    "the Django admin's user form": admin_removes_the_rater_role,
}


@pytest.mark.parametrize("way", MEMBERSHIP_REMOVALS)
def test_every_way_of_taking_a_rater_out_of_a_campaign_releases_their_lock(
    way, researcher, rater, other_rater
):
    campaign = pointwise_campaign(researcher, [rater, other_rater])
    elsewhere = pointwise_campaign(researcher, [rater], name="elsewhere")
    held = assignment_next(campaign=campaign, rater=rater).assignment
    kept = assignment_next(campaign=elsewhere, rater=rater).assignment
    MEMBERSHIP_REMOVALS[way](campaign, rater)
    held.refresh_from_db()
    kept.refresh_from_db()
    assert held.status == Assignment.Status.EXPIRED and held.note == REMOVED_NOTE
    assert CampaignItem.objects.get(pk=held.item_id).reserved == 0
    if way == "user.rating_campaigns.clear":
        # The user's side cleared: out of every campaign, so every lock goes.
        assert kept.status == Assignment.Status.EXPIRED and kept.note == REMOVED_NOTE
    else:
        # Only that campaign: the lock in another campaign stays.
        assert kept.status == Assignment.Status.SERVED and kept.note == ""


@pytest.mark.parametrize("way", ROLE_REMOVALS)
def test_every_way_of_removing_the_rater_role_releases_their_locks_everywhere(
    way, researcher, rater, other_rater, superuser_client
):
    first = pointwise_campaign(researcher, [rater, other_rater])
    second = pointwise_campaign(researcher, [rater], name="second")
    held = [
        assignment_next(campaign=c, rater=rater).assignment for c in (first, second)
    ]
    other = assignment_next(campaign=first, rater=other_rater).assignment
    ROLE_REMOVALS[way](User.objects.get(pk=rater.pk), superuser_client)
    for a in held:
        a.refresh_from_db()
        assert a.status == Assignment.Status.EXPIRED and a.note == ROLE_REMOVED_NOTE
        assert CampaignItem.objects.get(pk=a.item_id).reserved == 0
    other.refresh_from_db()
    if way not in ("group.user_set.clear", "the rater group deleted"):
        # Another rater's lock is not touched (the two ways above remove everyone).
        assert other.status == Assignment.Status.SERVED


def test_adding_raters_or_other_groups_releases_nothing(pointwise, rater, researcher):
    campaign, _, held = pointwise
    newcomer = UserFactory(username="newcomer", role="rater")
    campaign.raters.add(newcomer)
    rater.groups.add(Group.objects.get(name=roles.RESEARCHER))
    rater.groups.remove(Group.objects.get(name=roles.RESEARCHER))
    held.refresh_from_db()
    assert held.status == Assignment.Status.SERVED


def test_pairwise_locks_are_released(pairwise, rater, other_rater, researcher):
    campaign, _, held = pairwise
    remove_from_campaign(campaign, rater, researcher)
    held.refresh_from_db()
    assert held.status == Assignment.Status.EXPIRED and held.note == REMOVED_NOTE
    served = set()
    while a := pairwise_next(campaign=campaign, rater=other_rater).assignment:
        served.add(a.pair_id)
        pairwise_submit(
            assignment_id=a.pk,
            rater=other_rater,
            label="B",
            skill_labels={"factuality": "B"},
        )
    assert held.pair_id in served


def _waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database()"
        )
        return cursor.fetchone()[0]


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="concurrency proof runs on PostgreSQL"
)
@pytest.mark.django_db(transaction=True)
def test_a_removal_during_a_submit_neither_deadlocks_nor_releases_it_twice():
    """The release locks what a submit locks, in the same order (the assignment, then
    its item): a submit under way finishes and counts; the release then finds no live
    lock. (Locking the item first deadlocked with the submit.)"""
    researcher = UserFactory(username="res-race", role="researcher")
    rater = UserFactory(username="racer", role="rater")
    other = UserFactory(username="stayer", role="rater")
    campaign = pointwise_campaign(researcher, [rater, other])
    held = assignment_next(campaign=campaign, rater=rater).assignment
    errors: list[str] = []
    holds_assignment = threading.Event()
    go_on = threading.Event()

    def submit_under_way():
        # The statements of rating_submit, in its order, paused between the two
        # locks: the assignment row (FOR UPDATE), then the item's counters.
        try:
            with transaction.atomic():
                Assignment.objects.select_for_update().get(pk=held.pk)
                holds_assignment.set()
                go_on.wait(10)
                CampaignItem.objects.filter(pk=held.item_id).update(
                    reserved=F("reserved") - 1, submitted=F("submitted") + 1
                )
                Assignment.objects.filter(pk=held.pk).update(
                    status=Assignment.Status.SUBMITTED
                )
        except Exception as exc:
            errors.append(f"submit: {exc!r}")
        finally:
            connection.close()

    def removal():
        try:
            campaign_set_raters(campaign=campaign, raters=[other], user=researcher)
        except Exception as exc:
            errors.append(f"removal: {exc!r}")
        finally:
            connection.close()

    submit = threading.Thread(target=submit_under_way)
    submit.start()
    assert holds_assignment.wait(10)
    remove_thread = threading.Thread(target=removal)
    remove_thread.start()
    deadline = time.monotonic() + 10
    while _waiting_on_a_lock() == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    go_on.set()
    submit.join(30)
    remove_thread.join(30)
    assert not errors, errors
    held.refresh_from_db()
    item = CampaignItem.objects.get(pk=held.item_id)
    assert held.status == Assignment.Status.SUBMITTED and held.note == ""
    assert (item.submitted, item.reserved, item.open_slots) == (1, 0, item.target - 1)
    assert not campaign.raters.filter(pk=rater.pk).exists()


# --- Submitted work stays, counts as before, and is marked ------------------------------


def test_campaign_page_marks_work_from_a_removed_rater(
    pointwise, client_for, api_client_for, researcher, rater, other_rater
):
    campaign, done, _ = pointwise
    url = reverse("annotation:campaign-detail", args=[campaign.pk])
    before = client_for(researcher).get(url).content.decode()
    assert "removed-raters-note" not in before and ">removed</span>" not in before
    totals_before = selectors.campaign_progress(campaign=campaign)
    export_before = list(score_rows(dataset=campaign.dataset))
    remove_from_campaign(campaign, rater, researcher)
    html = client_for(researcher).get(url).content.decode()
    row = html.split(f"<td>{rater.username}", 1)[1].split("</tr>", 1)[0]
    assert ">removed</span>" in row
    n_scores = len(scores_for(done))
    assert f"1 submitted assignment ({n_scores} scores) from removed raters" in html
    # The figures and the export are those of before (the released lock aside).
    totals = selectors.campaign_progress(campaign=campaign)
    assert totals.ratings_submitted == totals_before.ratings_submitted == 1
    assert totals.responses_done == totals_before.responses_done
    assert list(score_rows(dataset=campaign.dataset)) == export_before
    assert HumanScore.objects.filter(assignment=done).count() == n_scores
    # The API's per-rater progress says the same.
    progress = (
        api_client_for(researcher)
        .get(f"/api/campaigns/{campaign.pk}/")
        .json()["progress"]
    )
    by_name = {r["username"]: r for r in progress["raters"]}
    assert by_name[rater.username]["removed"] is True
    assert by_name[rater.username]["submitted"] == 1
    assert progress["removed_submitted"] == 1
    assert progress["removed_scores"] == n_scores
    # A rater whose role was removed (still listed as a member) is marked too.
    assignment_next(campaign=campaign, rater=other_rater)
    remove_role(other_rater)
    html = client_for(researcher).get(url).content.decode()
    row = html.split(f"<td>{other_rater.username}", 1)[1].split("</tr>", 1)[0]
    assert ">removed</span>" in row


def test_pairwise_campaign_page_marks_work_from_a_removed_rater(
    pairwise, client_for, researcher, rater
):
    campaign, done, _ = pairwise
    url = reverse("annotation:pairwise-campaign-detail", args=[campaign.pk])
    assert ">removed</span>" not in client_for(researcher).get(url).content.decode()
    remove_role(rater)
    html = client_for(researcher).get(url).content.decode()
    row = html.split(f"<td>{rater.username}", 1)[1].split("</tr>", 1)[0]
    assert ">removed</span>" in row
    assert "1 submitted assignment" in html and "from removed raters" in html
    assert HumanPreference.objects.filter(assignment=done).count() == 1
