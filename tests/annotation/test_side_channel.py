"""Issue 34: nothing a rater can read tells a gold item (or attention check) from a
real one, and gold items whose answers a rater was shown are never a test for them.

For each item served, every number the rater's API and pages show is read before
the serve, after it and after the answer (submit or skip); the changes for gold
items must equal those for real items, so no classifier over them can do better
than chance."""

from __future__ import annotations

import re

from django.urls import reverse

from annotation.models import Assignment
from annotation.selectors import assignment_skills
from annotation.services.campaigns import campaign_set_training
from annotation.services.gold import gold_feedback
from tests.annotation.test_gold import gold_campaign, serve, submit
from tests.factories import campaign_from_fields


def _ints(html: str) -> list[int]:
    text = re.sub(r"<[^>]+>", " ", html)
    return [int(n) for n in re.findall(r"\d+", text)]


def _section(html: str, start: str, end: str) -> str:
    i = html.index(start)
    return html[i : html.index(end, i)]


def rater_numbers(api, web, campaign) -> dict[str, object]:
    """Every count a rater can read without being served: the progress API, the
    campaign list API, the campaign card on /rate/ and the history page."""
    out: dict[str, object] = {}
    progress = api.get(f"/api/rate/campaigns/{campaign.pk}/progress/").json()
    listing = api.get("/api/rate/campaigns/").json()["results"]
    row = next(r for r in listing if r["id"] == campaign.pk)
    for prefix, data in (("progress", progress), ("list", row["progress"])):
        for key, value in data.items():
            out[f"{prefix}.{key}"] = value
    home = web.get(reverse("annotation:rate-home")).content.decode()
    card = re.sub(
        r"<[^>]+>", " ", _section(home, f'data-campaign-id="{campaign.pk}"', "</li>")
    )
    out["home.open"] = int(re.search(r"(\d+) ratings? still open", card).group(1))
    out["home.skipped"] = (
        int(m.group(1)) if (m := re.search(r"you skipped (\d+)", card)) else 0
    )
    out["home.rated"] = int(re.search(r"(\d+) of \d+ done", card).group(1))
    out["home.total"] = int(re.search(r"\d+ of (\d+) done", card).group(1))
    history = web.get(reverse("annotation:rate-history", args=[campaign.pk]))
    body = history.content.decode()
    subtitle = re.sub(r"<[^>]+>", " ", _section(body, 'class="subtitle"', "</p>"))
    out["history.skipped"] = (
        int(m.group(1)) if (m := re.search(r"(\d+) skipped", subtitle)) else 0
    )
    out["history.rated"] = int(re.search(r"(\d+) rated", subtitle).group(1))
    out["history.rows"] = body.count("<tr>") - 1 if "rating-history" in body else 0
    return out


def _delta(before: dict, after: dict) -> tuple:
    """The change of every reading: numbers as differences, the rest as before/after
    equality (a label that changed text, a list of page numbers)."""
    out = []
    for key in sorted(before):
        a, b = before[key], after[key]
        if isinstance(a, int) and isinstance(b, int):
            out.append((key, b - a))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            out.append((key, tuple(y - x for x, y in zip(a, b, strict=True))))
        else:
            out.append((key, a == b))
    return tuple(out)


def test_no_rater_readable_count_or_field_tells_gold_from_real(
    researcher, rater, other_rater, api_client_for, client_for
):
    campaign, gold_ids = gold_campaign(
        researcher, [rater, other_rater], n=12, golds=3, rate=3, overlap=2
    )
    # Another rater's work first, so that real items read "partly rated".
    for _ in range(4):
        submit(other_rater, serve(campaign, other_rater))
    api, web = api_client_for(rater), client_for(rater)
    skipped = {True: False, False: False}
    events: dict[tuple[str, str], dict[bool, set]] = {}
    payload_shapes: dict[bool, set] = {True: set(), False: set()}
    page_before = None
    last, last_gold = None, False
    while True:
        before = rater_numbers(api, web, campaign)
        envelope = api.post(f"/api/rate/campaigns/{campaign.pk}/next/").json()
        if envelope["assignment"] is None:
            break
        data = envelope["assignment"]
        gold = Assignment.objects.get(pk=data["id"]).gold
        served = rater_numbers(api, web, campaign)
        page = web.get(reverse("annotation:rate-next", args=[campaign.pk]))
        header = _section(page.content.decode(), 'id="rater-progress"', "</div>")
        skipped_shown = re.search(r"(\d+) skipped", header)
        page_now = [
            *_ints(_section(header, 'class="progress-count"', "</span>")),
            int(skipped_shown.group(1)) if skipped_shown else 0,
        ]
        # What the serve itself returns and shows.
        payload_shapes[gold].add(
            (
                tuple(sorted(data)),
                tuple(sorted(data["instruction"])),
                tuple(sorted(data["response"])),
                tuple(s["key"] for s in data["skills"]),
                data["critique_mode"],
                data["status"],
                envelope["message"],
                envelope["locked_by_others"],
                tuple(sorted(envelope["progress"])),
                envelope["qualification"] is None,
            )
        )
        if page_before is not None:
            cycle = tuple(y - x for x, y in zip(page_before, page_now, strict=True))
            events.setdefault(("cycle", last), {True: set(), False: set()})[
                last_gold
            ].add(cycle)
        page_before = page_now
        action = "submit"
        # Skip one item of each kind (after a few), submit the others.
        if not skipped[gold] and Assignment.objects.filter(rater=rater).count() > 2:
            action = "skip"
            skipped[gold] = True
        if action == "skip":
            api.post(
                f"/api/rate/assignments/{data['id']}/skip/",
                {"reason": "unsure"},
                format="json",
            )
        else:
            scores = {s["key"]: 3 for s in data["skills"]}
            api.post(
                f"/api/rate/assignments/{data['id']}/submit/",
                {"scores": scores},
                format="json",
            )
        answered = rater_numbers(api, web, campaign)
        for phase, a, b in (("serve", before, served), ("answer", served, answered)):
            events.setdefault((phase, action), {True: set(), False: set()})[gold].add(
                _delta(a, b)
            )
        last, last_gold = action, gold
    assert Assignment.objects.filter(rater=rater, gold=True).count() == 3
    # Every phase seen for both kinds moved every reading identically.
    compared = 0
    for key, by_kind in events.items():
        if by_kind[True] and by_kind[False]:
            assert by_kind[True] == by_kind[False], key
            compared += 1
    assert {("serve", "submit"), ("answer", "submit"), ("serve", "skip"),
            ("answer", "skip")} <= {k for k, v in events.items()
                                     if v[True] and v[False]}  # fmt: skip
    assert compared >= 4
    assert payload_shapes[True] <= payload_shapes[False]
    # The count a rater reads is its own work left: 0 when done.
    assert rater_numbers(api, web, campaign)["progress.available"] == 0


def test_a_gold_items_reason_is_that_of_the_real_item_in_its_place(
    researcher, rater, other_rater
):
    campaign, _ = gold_campaign(
        researcher, [rater, other_rater], n=12, golds=3, rate=3, overlap=2
    )
    for _ in range(6):
        submit(other_rater, serve(campaign, other_rater))
    served = []
    while (a := serve(campaign, rater)) is not None:
        served.append(a)
        submit(rater, a)
    reasons = [(a.gold, a.reason) for a in served]
    # A gold item never reads "new" while the real items around it read "partly
    # rated": its reason is the one the next real item carries.
    for i, (gold, reason) in enumerate(reasons):
        if gold:
            following = next((r for g, r in reasons[i + 1 :] if not g), None)
            if following is not None:
                assert reason == following, reasons
    assert any(g and "partly" in r for g, r in reasons), reasons


def test_training_gold_is_never_served_again_as_a_test_to_that_rater(
    researcher, rater, other_rater
):
    """Gold answers shown in one campaign's training phase: that rater is never
    served those items again, there or in the dataset's other campaigns; another
    rater still is."""
    campaign, gold_ids = gold_campaign(
        researcher, [rater], n=6, golds=3, rate=2, training_phase=True
    )
    trained = set()
    while (a := serve(campaign, rater)) is not None:
        submit(rater, a)
        a.refresh_from_db()
        if a.gold:
            assert gold_feedback(a) is not None
            assert a.answers_shown
            trained.add(a.response_id)
    assert trained == gold_ids
    later = campaign_from_fields(
        name="later", dataset=campaign.dataset, created_by=researcher,
        raters=[rater, other_rater], gold_rate=2, overlap=2,
    )  # fmt: skip
    served_gold = {r: set() for r in (rater, other_rater)}
    for user in (rater, other_rater):
        while (a := serve(later, user)) is not None:
            submit(user, a)
            if a.gold:
                served_gold[user].add(a.response_id)
    assert served_gold[rater] == set()
    assert served_gold[other_rater] == gold_ids
    # Outside training no answers are shown, so nothing is marked.
    assert not Assignment.objects.filter(campaign=later, answers_shown=True).exists()


def test_a_failed_qualifications_report_makes_its_items_training(researcher, rater):
    dataset_campaign, gold_ids = gold_campaign(
        researcher, [rater], n=6, golds=4, rate=0, qualification_size=2,
        qualification_pass=1.0,
    )  # fmt: skip
    qualification_items = []
    while (a := serve(dataset_campaign, rater)) is not None:
        qualification_items.append(a.response_id)
        submit(rater, a, value=1)  # wrong: the expected factuality is 4
    assert len(qualification_items) == 2
    assert set(
        Assignment.objects.filter(rater=rater, answers_shown=True).values_list(
            "response_id", flat=True
        )
    ) == set(qualification_items)
    other = campaign_from_fields(
        name="other", dataset=dataset_campaign.dataset, created_by=researcher,
        raters=[rater], gold_rate=2,
    )  # fmt: skip
    seen, kinds = set(), []
    while (a := serve(other, rater)) is not None:
        submit(rater, a)
        kinds.append((a.gold, a.response_id))
        if a.gold:
            seen.add(a.response_id)
    assert seen == gold_ids - set(qualification_items), (
        kinds,
        qualification_items,
        gold_ids,
    )


def test_feedback_needs_the_record_of_answers_shown(researcher, rater):
    """An answer submitted outside the training phase is not shown later when the
    phase starts: only what was recorded as shown is shown."""
    campaign, _ = gold_campaign(researcher, [rater], n=4, golds=2, rate=1)
    a = serve(campaign, rater)
    assert a.gold
    submit(rater, a)
    campaign_set_training(campaign=campaign, on=True, user=researcher)
    a.refresh_from_db()
    assert gold_feedback(a) is None
    assert assignment_skills(assignment=a)


def test_the_gold_page_tells_the_researcher_the_training_rule(client_for, researcher):
    from tests.annotation.test_gold import make_dataset

    dataset = make_dataset(n=2)
    page = client_for(researcher).get(
        reverse("annotation:dataset-gold", args=[dataset.pk])
    )
    assert "never served to that rater again" in page.content.decode()
