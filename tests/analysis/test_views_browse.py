"""The scores browser: the instruction page with every human and judge score, the
dataset's filtered responses, previous / next links keeping the filters."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from analysis.selectors.browse import judge_item_score, rater_letter
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db

SKILLS = ("comprehension", "factuality", "readability")  # the factory's skills


def page_url(instruction_id: int) -> str:
    return reverse("analysis:instruction-detail", args=[instruction_id])


def responses_url(dataset) -> str:
    return reverse("analysis:dataset-responses", args=[dataset.pk])


def section(html: str, response_id: int, skill: str) -> str:
    """The HTML of one response's one skill block."""
    card = html.split(f'data-response="{response_id}"', 1)[1].split("</article>", 1)[0]
    return card.split(f'data-skill="{skill}"', 1)[1].split('class="skill-score', 1)[0]


@pytest.fixture
def small(researcher):
    """Two instructions x (alpha, beta), three raters, two runs.

    q0 alpha factuality: humans 4, 5, 5 (mean 4.67); judge A 2 (differs by 2.67)
    and judge B 5. Every other item: humans 3, 3, 3 and both judges 3.
    """
    human = {
        (i, m, k): [3, 3, 3]
        for i in range(2)
        for m in ("alpha", "beta")
        for k in SKILLS
    }
    judge_a = {
        (i, m, k): 3 for i in range(2) for m in ("alpha", "beta") for k in SKILLS
    }
    judge_b = dict(judge_a)
    human[(0, "alpha", "factuality")] = [4, 5, 5]
    judge_a[(0, "alpha", "factuality")] = 2
    judge_b[(0, "alpha", "factuality")] = 5
    return make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=2,
        name="browse",
    )


def test_instruction_page_shows_every_raters_and_runs_score_with_rationales(
    client_for, researcher, small
):
    alpha = small.responses[(0, "alpha")]
    response = client_for(researcher).get(page_url(alpha.instruction_id))

    assert response.status_code == 200
    html = response.content.decode()
    block = section(html, alpha.pk, "factuality")
    # three raters by letter, with their rationales, and both runs with theirs
    for letter, score in zip("ABC", [4, 5, 5], strict=True):
        assert re.search(rf"Rater {letter}\b.*?score-badge\">{score}<", block, re.S), (
            letter
        )
    assert "human 0 on factuality" in block and "human 2 on factuality" in block
    run_a, run_b = small.runs
    assert f"#{run_a.pk} judge A" in block and f"#{run_b.pk} judge B" in block
    assert "judge A says 2 for alpha on q0 factuality" in block
    assert "judge B says 5 for alpha on q0 factuality" in block
    assert "4.67" in block  # the raters' mean
    # Pseudonyms only: researchers never see the raters' usernames.
    for rater in small.raters:
        assert rater.username not in html


def test_disagreement_of_two_points_is_highlighted_and_others_are_not(
    client_for, researcher, small
):
    alpha = small.responses[(0, "alpha")]
    beta = small.responses[(0, "beta")]
    html = client_for(researcher).get(page_url(alpha.instruction_id)).content.decode()

    flagged = section(html, alpha.pk, "factuality")
    assert "judge and raters disagree" in flagged
    # judge A (2 vs 4.67) disagrees, judge B (5 vs 4.67) does not
    rows = re.findall(r'<tr class="judge-score( is-disagreement)?">', flagged)
    assert rows == [" is-disagreement", ""]
    assert "disagree" not in section(html, alpha.pk, "comprehension")
    assert "disagree" not in section(html, beta.pk, "factuality")


def test_admins_see_usernames_beside_the_pseudonyms(client_for, admin_user, small):
    alpha = small.responses[(0, "alpha")]
    html = client_for(admin_user).get(page_url(alpha.instruction_id)).content.decode()

    first = min(small.raters, key=lambda u: u.pk)
    assert f"Rater A ({first.username})" in html


def test_instruction_page_refuses_raters_and_anonymous(
    client_for, client, rater, small
):
    url = page_url(small.responses[(0, "alpha")].instruction_id)

    assert client_for(rater).get(url).status_code == 403
    assert client_for(small.raters[0]).get(url).status_code == 403
    assert client.get(url).status_code == 302  # to the login page


def test_rater_letters_and_judge_median_rules():
    assert [rater_letter(i) for i in (0, 1, 25, 26, 27)] == ["A", "B", "Z", "AA", "AB"]
    assert judge_item_score([2, 3]) == 3  # median 2.5 rounds half up
    assert judge_item_score([None, 4]) == 4
    assert judge_item_score([None, None]) is None


# --- Constant number of queries ---------------------------------------------------------


def build(researcher, n_models: int, n_raters: int, n_runs: int, name: str):
    models = tuple(f"model-{k:02d}" for k in range(n_models))
    human = {
        (0, m, k): [(j % 5) + 1 for j in range(n_raters)]
        for m in models
        for k in SKILLS
    }
    judges = [
        {(0, m, k): ((r + len(m)) % 5) + 1 for m in models for k in SKILLS}
        for r in range(n_runs)
    ]
    return make_agreement_setup(
        researcher,
        human=human,
        judges=judges,
        n_instructions=1,
        models=models,
        n_raters=n_raters,
        name=name,
    )


def queries_of(client, url: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return len(ctx.captured_queries), response.content.decode()


def test_instruction_page_runs_the_same_number_of_queries_whatever_its_size(
    client_for, researcher
):
    client = client_for(researcher)
    client.get("/")  # the session and the roles, read once per client
    target = build(researcher, n_models=15, n_raters=3, n_runs=3, name="size-15")
    bigger = build(researcher, n_models=30, n_raters=6, n_runs=5, name="size-30")

    url = page_url(target.responses[(0, "model-00")].instruction_id)
    n_target, html = queries_of(client, url)
    assert html.count('class="human-score"') == 15 * 3 * 3
    assert html.count('class="judge-score') == 15 * 3 * 3
    n_bigger, html = queries_of(
        client, page_url(bigger.responses[(0, "model-00")].instruction_id)
    )
    assert html.count('class="human-score"') == 30 * 3 * 6
    assert n_bigger == n_target, (n_bigger, n_target)
    smaller = build(researcher, n_models=2, n_raters=1, n_runs=1, name="size-2")
    n_smaller, html = queries_of(
        client, page_url(smaller.responses[(0, "model-00")].instruction_id)
    )
    assert html.count('class="human-score"') == 2 * 3 * 1
    assert n_smaller == n_target, (n_smaller, n_target)
    # and with a response filter for previous / next: still the same at both sizes
    run = target.runs[0].pk
    n_filtered, _ = queries_of(client, f"{url}?run={run}&disagree=2&skill=factuality")
    run = bigger.runs[0].pk
    n_filtered_bigger, _ = queries_of(
        client,
        page_url(bigger.responses[(0, "model-00")].instruction_id)
        + f"?run={run}&disagree=2&skill=factuality",
    )
    assert n_filtered == n_filtered_bigger


# --- The response filter ---------------------------------------------------------------


def listed(response) -> list[int]:
    return [
        int(x)
        for x in re.findall(r'<tr data-response="(\d+)">', response.content.decode())
    ]


def test_filter_by_disagreement_on_a_skill_lists_exactly_those_responses(
    client_for, researcher, small
):
    run_a, run_b = small.runs
    client = client_for(researcher)
    url = responses_url(small.dataset)
    alpha = small.responses[(0, "alpha")].pk

    hit = client.get(url, {"run": run_a.pk, "skill": "factuality", "disagree": "2"})
    assert hit.status_code == 200
    assert listed(hit) == [alpha]
    assert "4.67" in hit.content.decode()
    assert listed(client.get(url, {"run": run_b.pk, "disagree": "2"})) == []
    assert (
        listed(
            client.get(
                url, {"run": run_a.pk, "skill": "comprehension", "disagree": "1"}
            )
        )
        == []
    )
    # any skill when none is chosen
    assert listed(client.get(url, {"run": run_a.pk, "disagree": "2.5"})) == [alpha]


def test_filter_by_model_and_by_score_ranges(client_for, researcher, small):
    client = client_for(researcher)
    url = responses_url(small.dataset)
    r = small.responses
    run_a = small.runs[0].pk

    assert listed(client.get(url, {"model": "beta"})) == [
        r[(0, "beta")].pk,
        r[(1, "beta")].pk,
    ]
    assert listed(client.get(url, {"human_min": "4.5"})) == [r[(0, "alpha")].pk]
    assert listed(client.get(url, {"human_max": "3", "model": "alpha"})) == [
        r[(0, "alpha")].pk,  # its comprehension and readability are 3
        r[(1, "alpha")].pk,
    ]
    assert listed(client.get(url, {"run": run_a, "judge_max": "2"})) == [
        r[(0, "alpha")].pk
    ]
    assert listed(client.get(url, {"run": run_a, "judge_min": "4"})) == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"run": "abc"}, "run"),
        ({"run": "²"}, "run"),
        ({"run": "999999"}, "run"),
        ({"skill": "telepathy"}, "skill"),
        ({"model": "no-such-model"}, "model"),
        ({"run": "RUN", "disagree": "nine"}, "disagree"),
        ({"run": "RUN", "disagree": "5"}, "disagree"),
        ({"run": "RUN", "disagree": "NaN"}, "disagree"),
        ({"disagree": "2"}, "disagree"),  # no run to compare with
        ({"judge_min": "2"}, "judge_min"),
        ({"human_min": "0"}, "human_min"),
        ({"human_max": "Infinity"}, "human_max"),
        ({"human_min": "4", "human_max": "2"}, "human_max"),
        ({"run": "RUN", "judge_min": "5", "judge_max": "1"}, "judge_max"),
    ],
)
def test_bad_filter_values_are_a_400_naming_the_parameter(
    client_for, researcher, small, query, field
):
    query = {k: (str(small.runs[0].pk) if v == "RUN" else v) for k, v in query.items()}
    client = client_for(researcher)

    page = client.get(responses_url(small.dataset), query)
    assert page.status_code == 400
    assert f"<code>{field}</code>" in page.content.decode()
    # the htmx fragment says it in the results panel (htmx swaps only 2xx answers)
    fragment = client.get(responses_url(small.dataset), query, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200
    assert f"<code>{field}</code>" in fragment.content.decode()
    assert "<html" not in fragment.content.decode()
    # the instruction page refuses the same filter with a 400 page naming it
    instruction = small.responses[(0, "alpha")].instruction_id
    refused = client.get(page_url(instruction), query)
    assert refused.status_code == 400
    assert field in refused.content.decode()


def test_responses_page_refuses_raters(client_for, rater, small):
    assert client_for(rater).get(responses_url(small.dataset)).status_code == 403


# --- Previous / next ---------------------------------------------------------------------


def nav_links(html: str) -> dict[str, str]:
    return dict(re.findall(r'rel="(prev|next)" id="[a-z-]+" href="([^"]+)"', html))


def test_previous_and_next_follow_dataset_order_and_keep_the_filters(
    client_for, researcher
):
    # four instructions; q1 and q3 are the ones where judge A and the raters disagree
    human = {(i, "alpha", "factuality"): [3, 3, 3] for i in range(4)}
    judge = {(i, "alpha", "factuality"): 3 for i in range(4)}
    judge[(1, "alpha", "factuality")] = 5
    judge[(3, "alpha", "factuality")] = 1
    setup = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge],
        n_instructions=4,
        models=("alpha",),
        name="steps",
    )
    ids = [setup.responses[(i, "alpha")].instruction_id for i in range(4)]
    client = client_for(researcher)

    plain = client.get(page_url(ids[1])).content.decode()
    assert nav_links(plain) == {"prev": page_url(ids[0]), "next": page_url(ids[2])}
    assert "2 of 4 instructions" in plain
    first = client.get(page_url(ids[0])).content.decode()
    assert "prev" not in nav_links(first)

    query = f"?run={setup.runs[0].pk}&disagree=2"
    filtered = client.get(page_url(ids[1]) + query).content.decode()
    links = nav_links(filtered)
    assert links == {"next": page_url(ids[3]) + query.replace("&", "&amp;")}
    assert "1 of 2 instructions matching the filters" in filtered
    # the browser's own filters are kept too (q3 and q1 differ by search words)
    searched = client.get(page_url(ids[3]) + "?q=Question").content.decode()
    assert nav_links(searched)["prev"] == page_url(ids[2]) + "?q=Question"


def test_generated_ratings_are_labelled_on_the_instruction_page(
    client_for, researcher, small
):
    from django.contrib.auth.models import Group

    from flaskapp import roles

    bot = max(small.raters, key=lambda u: u.pk)  # "Rater C"
    bot.groups.add(Group.objects.get_or_create(name=roles.SYNTHETIC)[0])
    alpha = small.responses[(0, "alpha")]
    block = section(
        client_for(researcher).get(page_url(alpha.instruction_id)).content.decode(),
        alpha.pk,
        "factuality",
    )
    rows = re.findall(
        r'<tr class="human-score"><th scope="row">(.*?)</th>', block, re.S
    )
    assert [("generated" in r, r.split(" <")[0].split("<")[0]) for r in rows] == [
        (False, "Rater A"),
        (False, "Rater B"),
        (True, "Rater C"),
    ]


def test_responses_page_with_htmx_answers_only_the_results_fragment(
    client_for, researcher, small
):
    run_a = small.runs[0].pk
    response = client_for(researcher).get(
        responses_url(small.dataset),
        {"run": run_a, "disagree": "2"},
        HTTP_HX_REQUEST="true",
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="response-results"')
    assert listed(response) == [small.responses[(0, "alpha")].pk]
    # each row links to its instruction page with the filter kept
    assert f"?run={run_a}&amp;disagree=2#response-" in body
