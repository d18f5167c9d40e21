"""The dashboard at a glance: a headline per judge (QWK with its interval against the
human ceiling, skills below it), a compact table with one number per judge and skill
(interval and n on hover) and the full table one link away."""

from __future__ import annotations

import html as htmllib
import re

import pytest
from django.urls import reverse

from analysis.headline import compact_table, headlines
from analysis.selectors.agreement import agreement_compute
from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.test_views_agreement import MODELS, N_INSTR, score_tables

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(researcher):
    human, judge_a, judge_b = score_tables()
    return make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="glance-set",
    )


def test_headline_states_qwk_ceiling_and_skills_below(setup):
    result = agreement_compute(dataset=setup.dataset, n_boot=60)
    overall = result.row("overall")
    alpha = overall.human.stat("alpha_ordinal")
    skills = [r for r in result.rows if r.level == "skill"]
    for h, run in zip(headlines(result), setup.runs, strict=True):
        j = overall.judge(run.pk)
        qwk, (lo, hi) = j.stat("qwk").value, j.stat("qwk").ci
        below = sum(r.judge(run.pk).flag.below_ceiling for r in skills)
        want = (
            f"QWK {qwk:.2f} [{lo:.2f}, {hi:.2f}] (n={j.scored_by_both}) "
            f"vs human ceiling α {alpha.value:.2f} "
            f"[{alpha.ci[0]:.2f}, {alpha.ci[1]:.2f}] (n={alpha.n}); "
            f"below ceiling on {below} of {len(skills)} skills"
        )
        assert h["text"].startswith(want), h["text"]
    # judge B contradicts the raters on factuality: below the ceiling there
    assert headlines(result)[1]["below"] >= 1


def test_compact_table_has_one_number_per_judge_and_skill(setup):
    result = agreement_compute(dataset=setup.dataset, n_boot=60)
    table = compact_table(result)
    fact = next(r for r in table["rows"] if r["row"].key == "skill:factuality")
    b = fact["cells"][1]
    stat = result.row("skill:factuality").judge(setup.runs[1].pk).stat("qwk")
    assert b["value"] == stat.value and b["mark"] == "▼▼"
    assert f"[{stat.ci[0]:.2f}, {stat.ci[1]:.2f}]" in b["title"]
    assert f"n={stat.n}" in b["title"]


def page(client, s, **params):
    url = reverse("analysis:agreement", args=[s.dataset.pk])
    return client.get(url, {"n_boot": 60, **params}).content.decode()


def test_dashboard_opens_with_headlines_and_the_compact_table(
    setup, researcher, client_for
):
    html = page(client_for(researcher), setup)
    result = agreement_compute(dataset=setup.dataset, n_boot=60)
    for h in headlines(result):
        assert htmllib.escape(h["text"]) in html
    compact = html.split('id="agreement-compact"', 1)[1].split("</table>", 1)[0]
    fact = compact.split('data-row="skill:factuality"', 1)[1].split("</tr>", 1)[0]
    # the ceiling and one number per judge, nothing else
    assert len(re.findall(r"<td ", fact)) == 1 + len(setup.runs)
    assert 'id="agreement-table"' not in html
    link = re.search(r'<a href="([^"]+)" hx-get="[^"]+"[^>]*id="table-toggle"', html)
    assert link and "full=1" in link.group(1)


def test_full_table_is_one_link_away_with_and_without_htmx(
    setup, researcher, client_for
):
    c = client_for(researcher)
    full = page(c, setup, full=1)
    assert 'id="agreement-table"' in full and 'id="agreement-compact"' not in full
    assert "Compact table" in full
    url = reverse("analysis:agreement", args=[setup.dataset.pk])
    fragment = c.get(
        url, {"n_boot": 60, "full": 1}, headers={"HX-Request": "true"}
    ).content.decode()
    assert fragment.lstrip().startswith('<section id="agreement-results"')
    assert 'id="agreement-table"' in fragment
    # a sort is a column of the full table, so it shows the full table
    assert 'id="agreement-table"' in page(c, setup, sort="human")


def test_headlines_say_so_when_no_judge_shares_items(researcher):
    s = make_agreement_setup(
        researcher,
        human={(0, "alpha", "factuality"): [3, 4, "-"]},
        judges=[{(0, "beta", "factuality"): 4}],
        n_instructions=1,
        models=("alpha", "beta"),
        name="glance-none",
    )
    (h,) = headlines(agreement_compute(dataset=s.dataset, n_boot=0))
    assert "QWK not enough data (n=0)" in h["text"]
    assert "below ceiling on 0 of 0 skills" in h["text"]


def test_htmx_fragment_without_parameters_has_headlines_and_compact_table(
    setup, researcher, client_for
):
    url = reverse("analysis:agreement", args=[setup.dataset.pk])
    fragment = (
        client_for(researcher)
        .get(url, {"n_boot": 0}, headers={"HX-Request": "true"})
        .content.decode()
    )
    assert fragment.lstrip().startswith('<section id="agreement-results"')
    assert fragment.count('class="headline"') == len(setup.runs)
    assert 'id="agreement-compact"' in fragment and "<html" not in fragment


def test_a_custom_rubric_headline_counts_its_categorical_criterion(
    researcher, client_for
):
    """Issue 37, defect 18: the yes/no criterion is counted and the word is the
    rubric's "criteria", not FLASK's "skills"."""
    from tests.analysis.test_report_choice import _mixed

    s = _mixed(researcher, name="glance-mixed")
    url = reverse("analysis:agreement", args=[s.dataset.pk])
    page = client_for(researcher).get(url, {"n_boot": 0}).content.decode()
    text = page.split('class="headline-text">', 1)[1].split("</span>", 1)[0]
    assert " of 2 criteria" in text and "skills" not in text
