"""Meta-evaluation and bias report pages: numbers shown, errors, permissions."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db


def test_report_page_shows_figures_and_probes(pref_setup, researcher, client_for):
    dataset, _, run_a, cued = pref_setup
    client = client_for(researcher)
    home = client.get(reverse("analysis:metaeval-home"))
    assert home.status_code == 200 and dataset.name in home.content.decode()
    url = reverse("analysis:metaeval", args=[dataset.pk])
    page = client.get(url, {"run": [run_a.pk, cued.pk], "n_boot": 50})
    assert page.status_code == 200
    html = page.content.decode()
    assert f'id="metaeval-overall-{run_a.pk}"' in html
    assert "Accuracy, original order" in html
    assert "40%" in html  # accuracy in the original order, 2 of 5 comparisons
    assert "Bandwagon cue" in html and f'id="metaeval-probes-{cued.pk}"' in html
    # the order probe's row shows the same value and count as the selector
    from analysis.selectors.metaeval import metaeval_compute

    report = metaeval_compute(dataset=dataset, run_ids=[run_a.pk], n_boot=50)
    order = report["runs"][0]["report"]["probes"]["order"]["value"]
    probes = html[html.index(f'id="metaeval-probes-{run_a.pk}"') :]
    start = probes.index(">Position bias<")
    row = probes[start : probes.index("</tr>", start)]
    assert order["value"] is not None
    # a share of flipped pairs: shown as a percentage, beside its 50% baseline
    assert f"{100 * order['value']:.0f}%" in row and f"n={order['n']}" in row
    assert "<td>50%</td>" in row


def test_bad_parameters_are_reported_and_named(pref_setup, researcher, client_for):
    dataset, *_ = pref_setup
    url = reverse("analysis:metaeval", args=[dataset.pk])
    client = client_for(researcher)
    for query, field in (({"run": "999999"}, "run"), ({"n_boot": "x"}, "n_boot")):
        page = client.get(url, query)
        assert page.status_code == 400
        assert f"{field}:" in page.content.decode()


def test_pointwise_probe_page(researcher, client_for):
    human = {(i, "alpha", "readability"): [1 + i % 5, "-", "-"] for i in range(6)}
    human.update(
        {(i, "alpha", "factuality"): [1 + (i + 1) % 5, "-", "-"] for i in range(6)}
    )
    judge = {k: v[0] for k, v in human.items()}
    s = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=6, models=("alpha",),
        name="probe-page",
    )  # fmt: skip
    url = reverse("analysis:metaeval-probes", args=[s.dataset.pk])
    page = client_for(researcher).get(
        url, {"campaign": s.campaign.pk, "run": s.runs[0].pk, "n_boot": 30}
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="pointwise-probes"' in html
    assert "Halo effect" in html and "Length bias of scores" in html
    # Without families the page says where to set them, in words, not model names.
    changelist = reverse("admin:annotation_evaluatedmodel_changelist")
    assert f'href="{changelist}"' in html
    assert "(EvaluatedModel)" not in html


def test_an_admin_sets_an_evaluated_models_family_in_the_admin(client_for):
    from annotation.models import EvaluatedModel
    from tests.factories import UserFactory

    staff = UserFactory(username="staff-admin", role="admin", is_staff=True)
    staff.is_superuser = True
    staff.save()
    model = EvaluatedModel.objects.create(name="alpha")
    client = client_for(staff)
    changelist = reverse("admin:annotation_evaluatedmodel_changelist")
    assert "alpha" in client.get(changelist).content.decode()
    change = reverse("admin:annotation_evaluatedmodel_change", args=[model.pk])
    response = client.post(change, {"name": "alpha", "family": "acme"})
    assert response.status_code == 302
    model.refresh_from_db()
    assert model.family == "acme"


@pytest.mark.parametrize("name", ["metaeval-home", "metaeval", "metaeval-probes"])
def test_raters_and_anonymous_are_refused(pref_setup, rater, client_for, client, name):
    dataset, *_ = pref_setup
    args = [] if name == "metaeval-home" else [dataset.pk]
    url = reverse(f"analysis:{name}", args=args)
    assert client_for(rater).get(url).status_code == 403
    anon = client.get(url)
    assert anon.status_code == 302 and "/login/" in anon["Location"]


def test_category_columns_line_up_with_their_headers(
    pref_setup, researcher, client_for
):
    import re

    dataset, _, run_a, _ = pref_setup
    page = client_for(researcher).get(
        reverse("analysis:metaeval", args=[dataset.pk]), {"run": run_a.pk, "n_boot": 20}
    )
    html = page.content.decode()
    table = html[html.index(f'id="metaeval-categories-{run_a.pk}"') :]
    heads = re.findall(
        r'<th scope="col"[^>]*>([^<]+)</th>', table[: table.index("</thead>")]
    )
    assert heads[1:] == [
        "Acc. original", "Acc. swapped", "Both orders", "Consistency", "RM accuracy",
        "Kappa",
    ]  # fmt: skip
    row = table[table.index('<th scope="row">chat</th>') :]
    row = row[: row.index("</tr>")]
    values = re.findall(r"stat-value\">([^<]+)<", row)
    # chat: p0 (1 vote) and p1 (2 votes): original order 1/3 right, swapped 3/3,
    # both orders 1/3, consistent pairs 1 of 2, RM accuracy (no human ties) 2/3...
    assert values[:4] == ["33%", "100%", "33%", "50%"]


def _overall_row(html: str, run_id: int, label: str) -> str:
    table = html[html.index(f'id="metaeval-overall-{run_id}"') :]
    table = table[: table.index("</table>")]
    start = table.index(f">{label}</th>")
    return table[start : table.index("</tr>", start)]


def test_kappa_is_a_coefficient_and_accuracy_a_percentage(
    pref_setup, researcher, client_for
):
    """Kappa (-1..1) shows two decimals and its interval, never a percentage; the
    proportions beside it (accuracy, consistency) stay percentages."""
    import re

    from analysis.selectors.metaeval import metaeval_compute

    dataset, _, run_a, _ = pref_setup
    page = client_for(researcher).get(
        reverse("analysis:metaeval", args=[dataset.pk]), {"run": run_a.pk, "n_boot": 50}
    )
    html = page.content.decode()
    report = metaeval_compute(dataset=dataset, run_ids=[run_a.pk], n_boot=50)
    kappa = report["runs"][0]["report"]["overall"]["kappa"]
    assert kappa["value"] is not None and kappa["ci"]
    row = _overall_row(html, run_a.pk, "Cohen&#x27;s kappa")
    value = re.search(r'stat-value">([^<]+)<', row).group(1)
    ci = re.search(r'stat-ci"[^>]*>\[([^<]+)\]<', row).group(1)
    assert value == f"{kappa['value']:.2f}"
    assert ci == f"{kappa['ci'][0]:.2f}, {kappa['ci'][1]:.2f}"
    assert "%" not in value + ci
    accuracy = _overall_row(html, run_a.pk, "Accuracy, original order")
    assert re.search(r'stat-value">40%<', accuracy)


def test_probe_page_says_when_no_response_is_of_the_judges_family(
    researcher, client_for
):
    from annotation.models import EvaluatedModel
    from judging.models import JudgeConfig, JudgeRun

    human = {(i, "alpha", "readability"): [1 + i % 5, "-", "-"] for i in range(6)}
    judge = {k: v[0] for k, v in human.items()}
    s = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=6, models=("alpha",),
        name="no-own-page",
    )  # fmt: skip
    EvaluatedModel.objects.create(name="alpha", family="other")
    config = JudgeConfig.objects.create(name="fam judge", model_family="acme")
    JudgeRun.objects.filter(pk=s.runs[0].pk).update(config=config)
    page = client_for(researcher).get(
        reverse("analysis:metaeval-probes", args=[s.dataset.pk]),
        {"campaign": s.campaign.pk, "run": s.runs[0].pk, "n_boot": 20},
    )
    html = page.content.decode()
    row = html[html.index(">Self-preference in scores<") :]
    row = row[: row.index("</tr>")]
    # visible, not only in a tooltip
    assert (
        '<span class="stat-undefined">no response in this data comes from the '
        "judge&#x27;s own model family (acme)</span>"
    ) in row
    assert "not enough data" not in row.split("<dl")[0]
    assert "<td>0</td>" in row  # its baseline: no difference


def test_report_page_shows_accuracy_and_probe_charts(
    pref_setup, researcher, client_for
):
    import xml.etree.ElementTree as ET

    dataset, _, run_a, _ = pref_setup
    page = client_for(researcher).get(
        reverse("analysis:metaeval", args=[dataset.pk]), {"run": run_a.pk, "n_boot": 20}
    )
    html = page.content.decode()
    block = html[html.index(f'id="metaeval-charts-{run_a.pk}"') :]
    svgs = re.findall(r"<svg\b.*?</svg>", block[: block.index("</div>")], flags=re.S)
    assert len(svgs) == 2
    labels = [ET.fromstring(svg).get("aria-label") for svg in svgs]
    assert labels == [
        f"#{run_a.pk} judge A: accuracy per category",
        f"#{run_a.pk} judge A: bias probes against their baseline",
    ]
    assert "chat" in svgs[0] and "code" in svgs[0] and "Position bias" in svgs[1]
