"""Rater reliability: the statistics against scipy / scikit-learn and an explicit
loop on the same arrays; a campaign of raters with known habits (a harsh one, a
straight-liner, a fast one) measured and flagged; exclusions and pauses recorded,
applied to the analyses and the export, reversed; every endpoint refused to the roles
that must not use it."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from analysis.exports.scores import score_rows
from analysis.selectors.agreement.inputs import _human_rows
from analysis.selectors.reliability import (
    campaign_reliability,
    copy_binary_floats,
    query_floats,
)
from analysis.stats.correlations import spearman
from analysis.stats.kappa import quadratic_kappa as qwk
from analysis.stats.raters import leave_one_out, leave_one_out_mode, round_half_up
from annotation.models import Assignment, Campaign, RaterExclusion
from annotation.selectors import assignment_skills
from annotation.services.campaign_spec import (
    CampaignSpec,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create
from annotation.services.exclusions import (
    PAUSED_MESSAGE,
    rater_decision_end,
    rater_decision_start,
)
from annotation.services.rating import assignment_next, rating_submit
from flaskapp.errors import DomainError
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)

SKILLS = ["comprehension", "factuality", "readability"]


# --- the statistics on arrays -------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_qwk_is_scikit_learns_quadratic_kappa(seed):
    rng = np.random.default_rng(seed)
    labels = np.array([0, 1, 2, 3, 4]) if seed % 2 else np.arange(1, 11)
    a = rng.choice(labels, 60)
    b = np.clip(a + rng.integers(-2, 3, 60), labels[0], labels[-1])
    ours = qwk(a.astype(float), b.astype(float), labels.astype(float))
    theirs = cohen_kappa_score(a, b, labels=labels, weights="quadratic")
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_qwk_is_none_when_undefined():
    same = np.array([3.0, 3.0, 3.0])
    assert qwk(same, same, np.array([1.0, 2.0, 3.0, 4.0, 5.0])) is None


def test_spearman_is_scipys():
    rng = np.random.default_rng(3)
    a, b = rng.integers(1, 6, 40), rng.normal(size=40)
    assert spearman(a, b) == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)
    assert spearman(np.ones(5), b[:5]) is None  # constant: undefined


def test_leave_one_out_against_an_explicit_loop():
    rng = np.random.default_rng(7)
    groups = rng.integers(0, 15, 200)
    x = rng.integers(1, 6, 200).astype(float)
    consensus, has = leave_one_out(groups, x)
    for i in range(len(x)):
        others = [x[j] for j in range(len(x)) if groups[j] == groups[i] and j != i]
        assert has[i] == bool(others)
        if others:
            assert consensus[i] == pytest.approx(np.mean(others), abs=1e-12)
    codes, has = leave_one_out_mode(groups, x - 1, 5)
    for i in range(0, len(x), 7):
        others = [int(x[j] - 1) for j in range(len(x))
                  if groups[j] == groups[i] and j != i]  # fmt: skip
        if others:
            counts = np.bincount(others, minlength=5)
            assert codes[i] == int(np.argmax(counts))  # lowest code on a tie
    assert list(round_half_up(np.array([1.5, 2.49, 2.5, -0.5]))) == [2, 2, 3, 0]


# --- a campaign of raters with known habits ------------------------------------------


def truth(response_pk: int, skill_key: str) -> int:
    return 2 + (response_pk * 7 + SKILLS.index(skill_key) * 3) % 4  # 2..5


HABITS = {
    "ann": lambda t, k: t,  # the truth
    "bob": lambda t, k: t,
    "cat": lambda t, k: t - 1,  # harsh by one point
    "dan": lambda t, k: 3,  # the same score everywhere
}


@pytest.fixture
def habits_campaign(db, researcher):
    raters = {name: UserFactory(username=name, role="rater") for name in HABITS}
    dataset = DatasetFactory()
    for _ in range(12):
        instruction = InstructionFactory(dataset=dataset, skill_keys=SKILLS)
        ResponseFactory(instruction=instruction, model_name="m")
    campaign = campaign_create(spec=CampaignSpec(name="habits", dataset=dataset, raters=list(raters.values()), serving=ServingPolicy(overlap=4)), created_by=researcher)  # fmt: skip
    Campaign.objects.filter(pk=campaign.pk).update(speed_threshold_seconds=5)
    campaign.refresh_from_db()
    given = []
    for name, user in raters.items():
        while a := assignment_next(campaign=campaign, rater=user).assignment:
            scores = {
                s.key: HABITS[name](truth(a.response_id, s.key), s.key)
                for s in assignment_skills(assignment=a)
            }
            rating_submit(
                assignment_id=a.pk, rater=user, scores=scores,
                active_seconds=2.0 if name == "cat" else 30.0,
            )  # fmt: skip
            given += [(name, a.response_id, k, v) for k, v in scores.items()]
    return campaign, raters, given


def explicit(given, who: str, skill: str | None = None):
    """The rater's figures by hand: loops, scipy and scikit-learn."""
    mine, cons = [], []
    for name, rid, key, value in given:
        if name != who or (skill and key != skill):
            continue
        others = [v for n, r, k, v in given if r == rid and k == key and n != who]
        mine.append(value)
        cons.append(sum(others) / len(others))
    mine, cons = np.array(mine, float), np.array(cons)
    rounded = np.floor(cons + 0.5)
    return {
        "n": len(mine),
        "exact": float((mine == rounded).mean()),
        "within1": float((np.abs(mine - cons) <= 1).mean()),
        "severity": float((mine - cons).mean()),
        "spearman": spearmanr(mine, cons).statistic,
        "qwk": cohen_kappa_score(
            mine.astype(int),
            rounded.astype(int),
            labels=[1, 2, 3, 4, 5],
            weights="quadratic",
        ),  # fmt: skip
    }


def test_figures_match_an_explicit_computation(habits_campaign):
    campaign, raters, given = habits_campaign
    report = campaign_reliability(campaign=campaign)
    by_name = {r.username: r for r in report.raters}
    assert set(by_name) == set(HABITS)
    for name in ("ann", "cat"):
        r = by_name[name]
        want = explicit(given, name, "factuality")
        got = r.criteria["factuality"]
        assert got.n == want["n"] == 12
        for stat in ("exact", "within1", "severity", "spearman", "qwk"):
            assert getattr(got, stat) == pytest.approx(want[stat], abs=1e-12), stat
        overall = explicit(given, name)
        assert r.overall.n == overall["n"] == 36
        assert r.overall.severity == pytest.approx(overall["severity"], abs=1e-12)
    # Harsh by one point against three raters of whom one is also harsh and one flat.
    assert by_name["cat"].overall.severity < -0.5
    assert by_name["cat"].items == 12 and by_name["cat"].fast == 12
    assert by_name["dan"].straight == by_name["dan"].straight_items == 12
    assert by_name["ann"].straight_items == 12


def test_flags_name_their_reasons(habits_campaign):
    campaign, raters, _ = habits_campaign
    flags = {
        r.username: r.flags for r in campaign_reliability(campaign=campaign).raters
    }
    assert any("faster than the speed threshold" in f for f in flags["cat"])
    assert any("the same score on every criterion in 12 of 12" in f
               for f in flags["dan"])  # fmt: skip
    assert not any("faster" in f for f in flags["ann"])


def test_drift_quarters_follow_the_submit_order(habits_campaign):
    campaign, raters, given = habits_campaign
    r = {x.username: x for x in campaign_reliability(campaign=campaign).raters}["ann"]
    assert len(r.quarters) == 4
    assert sum(q.items for q in r.quarters) == 12
    assert [q.items for q in r.quarters] == [3, 3, 3, 3]
    assert sum(q.n for q in r.quarters) == r.overall.n


def test_cached_until_an_input_changes(habits_campaign, researcher):
    campaign, raters, _ = habits_campaign
    first = campaign_reliability(campaign=campaign)
    again = campaign_reliability(campaign=campaign)
    assert again.seconds == first.seconds  # the cached object, not recomputed
    rater_decision_start(
        campaign=campaign, rater=raters["dan"], kind="exclude",
        reason="straight-lined", user=researcher,
    )  # fmt: skip
    after = {r.username: r for r in campaign_reliability(campaign=campaign).raters}
    assert after["dan"].excluded and not after["ann"].excluded


# --- exclusions and pauses ----------------------------------------------------------


def test_an_exclusion_leaves_the_analyses_is_marked_in_the_export_and_reverses(
    habits_campaign, researcher
):
    campaign, raters, _ = habits_campaign
    before = _human_rows([campaign.pk])
    decision = rater_decision_start(
        campaign=campaign, rater=raters["dan"], kind="exclude",
        reason="straight-lined every item", user=researcher,
    )  # fmt: skip
    during = _human_rows([campaign.pk])
    # One fewer score per (response, skill): dan's score 3 is gone from the counts.
    assert during[:, 2:-1].sum() == before[:, 2:-1].sum() - 36
    exported = list(score_rows(dataset=campaign.dataset))
    assert {r["source"] for r in exported if r["excluded"]} == {"dan"}
    rater_decision_end(
        campaign=campaign, rater=raters["dan"], kind="exclude",
        reason="checked: fine", user=researcher,
    )  # fmt: skip
    assert (_human_rows([campaign.pk]) == before).all()
    decision.refresh_from_db()
    assert decision.ended_by == researcher and decision.end_reason == "checked: fine"
    assert RaterExclusion.objects.filter(campaign=campaign).count() == 1  # history


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"kind": "exclude", "reason": "  "}, "reason"),
        ({"kind": "ban", "reason": "x"}, "kind"),
        ({"kind": "exclude", "reason": "bad\x00"}, "reason"),
    ],
)
def test_bad_decisions_are_refused_and_change_nothing(
    habits_campaign, researcher, kwargs, field
):
    campaign, raters, _ = habits_campaign
    with pytest.raises(DomainError) as caught:
        rater_decision_start(
            campaign=campaign, rater=raters["ann"], user=researcher, **kwargs
        )
    assert caught.value.problems[0].field == field
    assert not RaterExclusion.objects.exists()


def test_refusals_for_outsiders_duplicates_and_nothing_to_reverse(
    habits_campaign, researcher
):
    campaign, raters, _ = habits_campaign
    outsider = UserFactory(username="eve", role="rater")
    with pytest.raises(DomainError) as caught:
        rater_decision_start(campaign=campaign, rater=outsider,
                                      kind="pause", reason="x", user=researcher)  # fmt: skip
    assert caught.value.problems[0].field == "rater"
    rater_decision_start(campaign=campaign, rater=raters["ann"],
                                  kind="pause", reason="x", user=researcher)  # fmt: skip
    with pytest.raises(DomainError):
        rater_decision_start(campaign=campaign, rater=raters["ann"],
                                      kind="pause", reason="y", user=researcher)  # fmt: skip
    with pytest.raises(DomainError):
        rater_decision_end(campaign=campaign, rater=raters["bob"],
                                    kind="pause", user=researcher)  # fmt: skip
    assert RaterExclusion.objects.count() == 1


def test_a_paused_rater_is_served_nothing_until_resumed(
    researcher, rater, api_client_for
):
    dataset = DatasetFactory()
    for _ in range(3):
        ResponseFactory(instruction=InstructionFactory(dataset=dataset), model_name="m")
    campaign = campaign_create(spec=CampaignSpec(name="p", dataset=dataset, raters=[rater]), created_by=researcher)  # fmt: skip
    rater_decision_start(campaign=campaign, rater=rater, kind="pause",
                                  reason="checking their work", user=researcher)  # fmt: skip
    body = api_client_for(rater).post(f"/api/rate/campaigns/{campaign.pk}/next/").json()
    assert body["assignment"] is None and body["message"] == PAUSED_MESSAGE
    assert not Assignment.objects.filter(campaign=campaign).exists()
    rater_decision_end(campaign=campaign, rater=rater, kind="pause",
                                user=researcher)  # fmt: skip
    body = api_client_for(rater).post(f"/api/rate/campaigns/{campaign.pk}/next/").json()
    assert body["assignment"] is not None


# --- interfaces ---------------------------------------------------------------------


def test_api_page_and_command(habits_campaign, researcher, api_client_for, client_for):
    campaign, raters, _ = habits_campaign
    body = (
        api_client_for(researcher)
        .get(f"/api/campaigns/{campaign.pk}/reliability/")
        .json()
    )
    assert {r["username"] for r in body["raters"]} == set(HABITS)
    dan = next(r for r in body["raters"] if r["username"] == "dan")
    assert dan["straight_lining"]["share"] == 1.0 and dan["flags"]
    page = client_for(researcher).get(f"/reliability/{campaign.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="reliability-raters"' in html and "the same score on every" in html
    out = io.StringIO()
    call_command("reliability", "--campaign", str(campaign.pk), stdout=out)
    assert "dan: the same score on every criterion" in out.getvalue()
    out = io.StringIO()
    call_command("reliability", "--campaign", str(campaign.pk), "--format", "json",
                 stdout=out)  # fmt: skip
    assert json.loads(out.getvalue())["campaign_id"] == campaign.pk


def test_decision_api_and_page(habits_campaign, researcher, api_client_for, client_for):
    campaign, raters, _ = habits_campaign
    api = api_client_for(researcher)
    url = f"/api/campaigns/{campaign.pk}/raters/{raters['cat'].pk}/decisions/"
    bad = api.post(url, {"kind": "exclude", "action": "start", "reason": ""},
                   format="json")  # fmt: skip
    assert bad.status_code == 400
    assert {p["field"] for p in bad.json()["problems"]} == {"reason"}
    done = api.post(url, {"kind": "exclude", "action": "start",
                          "reason": "too fast"}, format="json")  # fmt: skip
    assert done.status_code == 201 and done.json()["kind"] == "exclude"
    history = api.get(f"/api/campaigns/{campaign.pk}/decisions/").json()
    assert [(d["username"], d["ended_at"]) for d in history] == [("cat", None)]
    page = client_for(researcher).post(
        f"/campaigns/{campaign.pk}/rater-decision/",
        {"rater_id": raters["cat"].pk, "action": "end:exclude", "reason": "ok",
         "next": f"/reliability/{campaign.pk}/"},
    )  # fmt: skip
    assert (
        page.status_code == 302 and page["Location"] == f"/reliability/{campaign.pk}/"
    )
    assert RaterExclusion.objects.get().ended_at is not None
    outside = client_for(researcher).post(
        f"/campaigns/{campaign.pk}/rater-decision/",
        {"rater_id": raters["cat"].pk, "action": "start:pause", "reason": "x",
         "next": "https://evil.example/"},
    )  # fmt: skip
    assert outside["Location"] == f"/campaigns/{campaign.pk}/"


def test_every_endpoint_refuses_raters_users_without_role_and_anonymous(
    habits_campaign, no_role_user, api_client_for, client_for
):
    campaign, raters, _ = habits_campaign
    rater = raters["ann"]
    api_urls = [
        ("get", f"/api/campaigns/{campaign.pk}/reliability/"),
        ("get", f"/api/campaigns/{campaign.pk}/decisions/"),
        ("post", f"/api/campaigns/{campaign.pk}/raters/{rater.pk}/decisions/"),
    ]
    for user, codes in ((rater, {403}), (no_role_user, {403}), (None, {401, 403})):
        for method, url in api_urls:
            response = getattr(api_client_for(user), method)(
                url, {"kind": "pause", "action": "start", "reason": "x"},
                format="json",
            )  # fmt: skip
            assert response.status_code in codes, (user, url)
    for user in (rater, no_role_user):
        assert client_for(user).get(f"/reliability/{campaign.pk}/").status_code == 403
        posted = client_for(user).post(
            f"/campaigns/{campaign.pk}/rater-decision/",
            {"rater_id": rater.pk, "action": "start:pause", "reason": "x"},
        )
        assert posted.status_code == 403
    assert client_for(None).get(f"/reliability/{campaign.pk}/").status_code == 302
    assert not RaterExclusion.objects.exists()


def test_a_campaign_without_ratings_has_an_empty_report(researcher, client_for):
    dataset = DatasetFactory()
    ResponseFactory(instruction=InstructionFactory(dataset=dataset), model_name="m")
    campaign = campaign_create(
        spec=CampaignSpec(name="e", dataset=dataset), created_by=researcher
    )
    report = campaign_reliability(campaign=campaign)
    assert report.raters == [] and report.scores == 0
    page = client_for(researcher).get(f"/reliability/{campaign.pk}/")
    assert page.status_code == 200 and "No rater has submitted" in page.content.decode()


def test_generated_ratings_are_labelled_synthetic(
    habits_campaign, researcher, client_for
):
    from django.contrib.auth.models import Group

    from flaskapp import roles

    campaign, raters, _ = habits_campaign
    raters["dan"].groups.add(Group.objects.get_or_create(name=roles.SYNTHETIC)[0])
    report = campaign_reliability(campaign=campaign)
    assert {r.username for r in report.raters if r.synthetic} == {"dan"}
    html = client_for(researcher).get(f"/reliability/{campaign.pk}/").content.decode()
    assert html.count(">synthetic</span>") == 1


# --- reading a query of numbers -----------------------------------------------------


@pytest.mark.django_db
def test_query_floats_reads_every_row_in_order_with_null_as_nan():
    # integers past 2**31, numerics, doubles and NULLs, in the query's (descending)
    # order; on PostgreSQL through the binary COPY, elsewhere through fetch
    sql = (
        "SELECT g, g * 3000000000, CASE WHEN g %% 3 = 0 THEN NULL ELSE g * 0.25 END, "
        "CASE WHEN g %% 4 = 0 THEN NULL ELSE g / 8.0 END FROM ({}) AS s "
        "WHERE g >= %s ORDER BY g DESC"
    ).format(" UNION ALL ".join(f"SELECT {i} AS g" for i in range(1, 13)))
    got = query_floats(sql, [2], 4)
    g = np.arange(12, 1, -1, dtype=float)
    want = np.stack([g, g * 3e9, np.where(g % 3 == 0, np.nan, g * 0.25),
                     np.where(g % 4 == 0, np.nan, g / 8)], axis=1)  # fmt: skip
    np.testing.assert_array_equal(got, want)
    assert query_floats(sql, [99], 4).shape == (0, 4)


def test_a_binary_copy_of_other_fields_is_refused():
    with pytest.raises(ValueError, match="^data: not a PostgreSQL binary COPY"):
        copy_binary_floats(b"1,2\n", 2)
    header = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
    int4_row = (1).to_bytes(2, "big") + (4).to_bytes(4, "big") + (7).to_bytes(4, "big")
    with pytest.raises(ValueError, match="^data: rows are not all float8"):
        copy_binary_floats(header + int4_row + b"\xff\xff", 1)
    assert copy_binary_floats(header + b"\xff\xff", 3).shape == (0, 3)
