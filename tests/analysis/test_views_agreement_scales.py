"""The agreement dashboard on a rubric with criteria on different scales (0-4,
1-10 and a categorical one): the pooled rows say why they have no figure, each
criterion shows its scale, charts draw each criterion on its own scale and the
radar normalises (and says so)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from django.urls import reverse

from analysis.selectors.agreement import agreement_compute
from tests.analysis.scale_data import make_rubric, make_scale_setup
from tests.analysis.test_agreement_scales import MODELS, tables

pytestmark = pytest.mark.django_db

SVG_NS = "{http://www.w3.org/2000/svg}"
SCALES = {"brief": (0, 4), "deep": (1, 10), "clear": (0, 4)}


@pytest.fixture
def mixed(researcher):
    rubric = make_rubric(
        "mixed-dash",
        [
            *({"key": k, "low": lo, "high": hi} for k, (lo, hi) in SCALES.items()),
            {"key": "safe", "labels": ["yes", "no"]},
        ],
    )
    human, judge_a, judge_b = tables(SCALES, seed=9, n_instr=8)
    return make_scale_setup(
        rubric,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=8,
        models=MODELS,
        name="mixdash",
    )


def query(s, **extra) -> dict:
    return {
        "campaign": [s.campaign.pk],
        "run": [r.pk for r in s.runs],
        "n_boot": 40,
        "full": 1,
        **extra,
    }


def svg(client, s, kind, **extra):
    url = reverse("analysis:agreement-chart", args=[s.dataset.pk, kind])
    response = client.get(url, query(s, **extra))
    assert response.status_code == 200, response.content[:300]
    return response.content.decode(), ET.fromstring(response.content)


def test_dashboard_says_why_the_overall_is_missing_and_shows_scales(
    client_for, researcher, mixed
):
    c = client_for(researcher)
    for full in (1, 0):  # the full table and the compact one
        html = c.get(
            reverse("analysis:agreement", args=[mixed.dataset.pk]),
            query(mixed, full=full),
        ).content.decode()
        overall = html.split('data-row="overall"', 1)[1].split("</tr>", 1)[0]
        assert "different scales (0-4, 1-10)" in overall
        assert "No items" not in overall
        deep = html.split('data-row="skill:deep"', 1)[1].split("</tr>", 1)[0]
        assert "scale 1-10" in deep
        assert 'data-row="skill:safe"' not in html  # categorical: not in this engine


def test_heatmap_is_drawn_on_the_criterion_scale(client_for, researcher, mixed):
    rid = mixed.runs[0].pk
    res = agreement_compute(
        dataset=mixed.dataset,
        campaign_ids=[mixed.campaign.pk],
        run_ids=[r.pk for r in mixed.runs],
        n_boot=40,
    )
    confusion = res.row("skill:deep").judge(rid).confusion
    _, root = svg(
        client_for(researcher), mixed, "heatmap", chart="skill:deep", judge=rid
    )
    cells = root.findall(f".//{SVG_NS}g[@class='cells']/{SVG_NS}g")
    assert len(cells) == 100
    counts = [int(cell.find(f"{SVG_NS}text").text) for cell in cells]
    assert counts == [n for r in reversed(confusion) for n in r]
    tips = [cell.find(f"{SVG_NS}title").text for cell in cells]
    assert tips[0].split(",")[0].endswith(" 10")  # the top row is score 10
    _, root = svg(client_for(researcher), mixed, "heatmap", chart="overall", judge=rid)
    assert "different scales" in ET.tostring(root, encoding="unicode")


def test_radar_normalises_mixed_scales_and_says_so(client_for, researcher, mixed):
    text, root = svg(client_for(researcher), mixed, "radar", model="beta")
    assert "normalised to 0-1" in text
    assert "on 1-10" in text  # the tooltip keeps the criterion's own value
    # rings 0, 0.25, ..., 1 (normalised), not the 1..5 scale
    scale = [t.text for t in root.iter(f"{SVG_NS}text") if t.get("class") == "scale"]
    assert scale == ["0", "0.25", "0.5", "0.75", "1"]
    ranks, _ = svg(client_for(researcher), mixed, "ranks", chart="overall")
    assert "normalised" in ranks


def test_drilldown_shows_scores_on_the_criterion_scale(client_for, researcher, mixed):
    url = reverse("analysis:agreement-skill", args=[mixed.dataset.pk, "brief"])
    response = client_for(researcher).get(url, query(mixed))
    assert response.status_code == 200
    assert "brief" in response.content.decode().lower()
