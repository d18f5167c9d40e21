"""Meta-evaluation and probe figures have one name and one explanation each
(analysis.glossary), and the pages show those, never an internal key."""

from __future__ import annotations

import html as html_lib
import re

import numpy as np
import pytest
from django.urls import reverse

from analysis import stats as me
from analysis.glossary import FIGURES, PROBE_DETAIL_OVERRIDES, figure
from analysis.selectors.metaeval import _flip_probe
from tests.analysis.agreement_data import make_agreement_setup

# Keys an earlier version showed as they are (issue 13).
INTERNAL_KEYS = [
    "score_inflation",
    "judge_spearman",
    "dropped_missing",
    "first_position_share",
    "usable_pairs",
]


def visible_text(response) -> str:
    body = response.content.decode()
    body = re.sub(r"<(script|style|title)\b.*?</\1>", " ", body, flags=re.S)
    body = re.sub(r"<[^>]+>", " ", body)  # attributes (title tooltips) go too
    return re.sub(r"\s+", " ", html_lib.unescape(body))


def _report_keys():
    """Every key a report and every probe produce, on data that defines them all."""
    rng = np.random.default_rng(3)
    n = 40
    labels = np.array(["1", "2", "tie"], dtype=object)
    ab, ba = labels[rng.integers(0, 3, n)], labels[rng.integers(0, 3, n)]
    vp = np.repeat(np.arange(n), 2)
    vl = labels[rng.integers(0, 3, 2 * n)]
    own = rng.integers(0, 2, n).astype(bool)
    data = me.PairwiseData(
        np.arange(n), ab, ba, vp, vl, category=np.array(["a", "b"] * 20, object),
        length_1=rng.integers(1, 99, n), length_2=rng.integers(1, 99, n),
        own_1=own, own_2=~own,
    )  # fmt: skip
    rep = me.metaeval_report(data, n_boot=5)
    figures = [k for k in rep["overall"] if k != "counts"]
    counts = list(rep["overall"]["counts"])
    probes = list(rep["probes"].values())
    j, h = rng.integers(1, 6, 30).astype(float), rng.integers(1, 6, 30).astype(float)
    probes += [
        me.cue_probe(ab, ba, np.array(["1"] * n, object), n_boot=5),
        me.pointwise_length_probe(j, h, rng.integers(1, 99, 30), n_boot=5),
        me.score_inflation_probe(j, h, rng.integers(0, 2, 30), n_boot=5),
        me.halo_probe(j.reshape(10, 3), h.reshape(10, 3), n_boot=5),
    ]

    class Run:
        probe = "attention"

    rows = (np.arange(n), np.array(["ab"] * n, object), ab)
    probes.append(_flip_probe(Run, rows, *rows, 5, 0))
    return figures, counts, probes


def test_every_figure_count_probe_and_detail_has_a_name_and_an_explanation():
    figures, counts, probes = _report_keys()
    assert len(probes) == 8  # order, length, self-preference, 5 more
    names = [p.name for p in probes]
    details = {k for p in probes for k in p.details}
    for key in figures + counts + names:
        assert key in FIGURES, key
    for key in details:
        assert key in FIGURES or key in PROBE_DETAIL_OVERRIDES, key
    for key in figures + counts + names + sorted(details):
        f = figure(key, probe_detail=key in details)
        assert f.label and "_" not in f.label, key
        assert f.help.endswith(".") and len(f.help) > 20, key
        assert f.kind in ("share", "corr", "signed", "count"), key


def test_kinds_say_how_each_figure_is_shown():
    assert figure("kappa").kind == "corr" and figure("kappa_ab_no_ties").kind == "corr"
    assert (
        figure("accuracy_ab").kind == "share" and figure("consistency").kind == "share"
    )
    assert figure("judge_spearman").kind == "corr"
    assert figure("dropped_missing").kind == "count"
    # an unknown key still never shows as a key
    assert figure("some_new_count").label == "Some new count"


@pytest.mark.django_db
def test_report_page_names_and_explains_its_figures(pref_setup, researcher, client_for):
    dataset, _, run_a, cued = pref_setup
    page = client_for(researcher).get(
        reverse("analysis:metaeval", args=[dataset.pk]),
        {"run": [run_a.pk, cued.pk], "n_boot": 20},
    )
    assert page.status_code == 200
    text = visible_text(page)
    for key in INTERNAL_KEYS + ["usable_pairs_both_orders", "human_votes_tie"]:
        assert key not in text, key
    html = page.content.decode()
    glossary = html[html.index('class="glossary"') :]
    glossary = html_lib.unescape(glossary[: glossary.index("</dl>")])
    for key in ("kappa", "consistency", "order", "length", "bandwagon"):
        f = figure(key)
        assert f"<dt>{f.label}</dt><dd>{f.help}</dd>" in glossary, key
    # the probe details and the counts carry their labels
    assert figure("first_position_share").label in text
    assert figure("usable_pairs", probe_detail=True).label in text
    assert figure("usable_pairs_both_orders").label in text


@pytest.mark.django_db
def test_probe_page_names_and_explains_its_figures(researcher, client_for):
    human = {(i, "alpha", "readability"): [1 + i % 5, "-", "-"] for i in range(6)}
    human.update(
        {(i, "alpha", "factuality"): [1 + (i + 1) % 5, "-", "-"] for i in range(6)}
    )
    judge = {k: v[0] for k, v in human.items()}
    s = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=6, models=("alpha",),
        name="glossary-page",
    )  # fmt: skip
    page = client_for(researcher).get(
        reverse("analysis:metaeval-probes", args=[s.dataset.pk]),
        {"campaign": s.campaign.pk, "run": s.runs[0].pk, "n_boot": 20},
    )
    assert page.status_code == 200
    text = visible_text(page)
    for key in INTERNAL_KEYS + ["pointwise_length", "human_mean_r", "skill_pairs"]:
        assert key not in text, key
    for key in ("pointwise_length", "halo", "judge_spearman", "dropped_missing"):
        f = figure(key)
        assert f.label in text and f.help in text, key
