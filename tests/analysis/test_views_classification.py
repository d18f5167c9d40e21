"""The categorical section of the agreement dashboard and its API, and the
classification section of the meta-evaluation page: the numbers shown are the
selector's, bad input names the parameter, raters are refused."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from analysis.selectors.classification import classification_compute
from tests.analysis.classification_data import make_classification_setup

pytestmark = pytest.mark.django_db

N_BOOT = 40


def _tables():
    """Yes/no and safe/borderline/unsafe over 6 instructions x 2 models, 3 raters;
    judge A agrees with the majority except on 3 items, judge B says "yes" always."""
    human, judge_a, judge_b = {}, {}, {}
    for i in range(6):
        for m in ("alpha", "beta"):
            truth = "yes" if (i + (m == "beta")) % 3 else "no"
            other = "no" if truth == "yes" else "yes"
            human[(i, m, "consistent")] = [truth, truth, other if i % 2 else truth]
            safety = ["safe", "unsafe", "safe"][i % 3]
            human[(i, m, "safety")] = [safety, safety, "safe"]
            judge_a[(i, m, "consistent")] = (
                other if i in (1, 4) and m == "alpha" else truth
            )
            judge_a[(i, m, "safety")] = "borderline" if i == 5 else safety
            judge_b[(i, m, "consistent")] = "yes"
    judge_a[(2, "beta", "consistent")] = None  # judge N/A
    return human, judge_a, judge_b


@pytest.fixture
def setup(researcher):
    human, judge_a, judge_b = _tables()
    return make_classification_setup(
        researcher, human=human, judges=[judge_a, judge_b], n_instructions=6,
        name="cls-views",
    )  # fmt: skip


def _computed(setup):
    return classification_compute(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_ids=[r.pk for r in setup.runs],
        n_boot=N_BOOT,
    )


def _section(html: str, start: str, end: str = "</table>") -> str:
    i = html.index(start)
    return html[i : html.index(end, i)]


def test_dashboard_shows_the_categorical_figures(client_for, researcher, setup):
    url = reverse("analysis:agreement", args=[setup.dataset.pk])
    query = {
        "campaign": setup.campaign.pk,
        "run": [r.pk for r in setup.runs],
        "n_boot": N_BOOT,
    }
    page = client_for(researcher).get(url, query)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="categorical-agreement"' in html and "Classification</span>" in html
    want = _computed(setup)
    crit = {c["key"]: c for c in want["criteria"]}
    run_a = str(setup.runs[0].pk)
    fig = crit["consistent"]["judges"][run_a]
    runs_table = _section(html, 'id="categorical-consistent-runs"')
    row = _section(runs_table, f'data-run="{run_a}"', "</tr>")
    assert f"{100 * fig['accuracy']['value']:.0f}%" in row
    assert f"{fig['kappa']['value']:.2f}" in row
    assert f"n={fig['n_items']}" in row
    # The confusion matrix, with label names, cell by cell.
    confusion = _section(html, f'id="categorical-consistent-confusion-{run_a}"')
    assert ">Yes</th>" in confusion and ">No</th>" in confusion
    cells = [
        [int(x) for x in re.findall(r'<td class="num[^"]*">(\d+)</td>', tr)]
        for tr in confusion.split("<tr>")[2:]
    ]
    assert [c[:-1] for c in cells] == [r["cells"] for r in fig["confusion"]]
    # Three labels, "borderline" never the majority: its recall is n/a.
    labels = _section(html, f'id="categorical-safety-labels-{run_a}"')
    borderline = _section(labels, ">Borderline</th>", "</tr>")
    assert "n/a" in borderline
    humans = _section(html, 'id="categorical-consistent-humans"', "</dl>")
    fleiss = crit["consistent"]["humans"]["fleiss"]["value"]
    assert "Fleiss" in humans and f"{fleiss:.2f}" in humans
    ceiling_row = _section(html, 'id="categorical-consistent-ceiling"', "</tr>")
    ceiling = crit["consistent"]["humans"]["ceiling"]["kappa"]["value"]
    assert "leave one out" in ceiling_row and f"{ceiling:.2f}" in ceiling_row


def test_htmx_fragment_carries_the_section(client_for, researcher, setup):
    url = reverse("analysis:agreement", args=[setup.dataset.pk])
    resp = client_for(researcher).get(
        url,
        {"campaign": setup.campaign.pk, "n_boot": N_BOOT},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="agreement-results",
    )
    html = resp.content.decode()
    assert resp.status_code == 200 and "<html" not in html
    assert 'id="categorical-agreement"' in html


def test_flask_dashboard_has_no_categorical_section(client_for, researcher):
    from tests.analysis.agreement_data import make_agreement_setup

    s = make_agreement_setup(
        researcher,
        human={(0, "alpha", "factuality"): [4, 5], (0, "beta", "factuality"): [2, 2]},
        judges=[{(0, "alpha", "factuality"): 4, (0, "beta", "factuality"): 3}],
        n_instructions=1,
        n_raters=2,
        name="flask-only",
    )
    page = client_for(researcher).get(
        reverse("analysis:agreement", args=[s.dataset.pk]), {"n_boot": 0}
    )
    assert page.status_code == 200
    assert "categorical-agreement" not in page.content.decode()


def test_api_returns_the_same_figures(api_client_for, researcher, setup):
    url = reverse("analysis_api:agreement", args=[setup.dataset.pk])
    resp = api_client_for(researcher).get(
        url,
        {
            "campaign": setup.campaign.pk,
            "run": [r.pk for r in setup.runs],
            "n_boot": N_BOOT,
        },
    )
    assert resp.status_code == 200, resp.content
    assert resp.json()["categorical"] == json.loads(json.dumps(_computed(setup)))


def test_metaeval_page_shows_classification_runs_with_the_ceiling(
    client_for, researcher, setup
):
    client = client_for(researcher)
    home = client.get(reverse("analysis:metaeval-home")).content.decode()
    assert setup.dataset.name in home and "Classification judges" in home
    url = reverse("analysis:metaeval", args=[setup.dataset.pk])
    page = client.get(url, {"crun": setup.runs[0].pk, "n_boot": N_BOOT})
    assert page.status_code == 200, page.content.decode()[:2000]
    html = page.content.decode()
    assert "Classification judges vs the human majority" in html
    assert f'name="crun" value="{setup.runs[1].pk}"' in html
    want = classification_compute(
        dataset=setup.dataset, run_ids=[setup.runs[0].pk], n_boot=N_BOOT
    )
    crit = want["criteria"][0]
    fig = crit["judges"][str(setup.runs[0].pk)]
    row = _section(html, f'data-run="{setup.runs[0].pk}"', "</tr>")
    assert f"{100 * fig['accuracy']['value']:.0f}%" in row
    assert f'data-run="{setup.runs[1].pk}"' not in html  # not chosen
    ceiling_row = _section(html, 'id="categorical-consistent-ceiling"', "</tr>")
    loo = crit["humans"]["ceiling"]["accuracy"]["value"]
    assert "leave one out" in ceiling_row and f"{100 * loo:.0f}%" in ceiling_row


def test_metaeval_bad_classification_parameters_are_400s(client_for, researcher, setup):
    url = reverse("analysis:metaeval", args=[setup.dataset.pk])
    client = client_for(researcher)
    bad = client.get(url, {"crun": "x"})
    assert bad.status_code == 400 and "crun: must be run ids" in bad.content.decode()
    other = client.get(url, {"crun": 999999})
    assert (
        other.status_code == 400 and "run: 999999 not found" in other.content.decode()
    )


def test_raters_are_refused(client_for, rater, setup):
    client = client_for(rater)
    assert (
        client.get(reverse("analysis:agreement", args=[setup.dataset.pk])).status_code
        == 403
    )
    assert (
        client.get(reverse("analysis:metaeval", args=[setup.dataset.pk])).status_code
        == 403
    )


def test_classification_api_returns_the_figures_and_names_bad_parameters(
    api_client_for, researcher, rater, setup
):
    url = reverse("analysis_api:classification", args=[setup.dataset.pk])
    client = api_client_for(researcher)
    resp = client.get(url, {"run": setup.runs[0].pk, "n_boot": N_BOOT})
    assert resp.status_code == 200, resp.content
    want = classification_compute(
        dataset=setup.dataset, run_ids=[setup.runs[0].pk], n_boot=N_BOOT
    )
    assert resp.json() == json.loads(json.dumps(want))
    bad = client.get(url, {"run": 999999})
    assert bad.status_code == 400
    assert "run" in json.dumps(bad.json()) and "999999" in json.dumps(bad.json())
    bad_slice = client.get(url, {"slice": "colour:red"})
    assert bad_slice.status_code == 400 and "slice" in json.dumps(bad_slice.json())
    assert api_client_for(rater).get(url).status_code == 403


def test_metaeval_api_covers_classification_runs(
    api_client_for, researcher, rater, setup
):
    """A dataset with classification runs and no pairwise run: the meta-evaluation
    API answers with no pairwise runs and the classification figures (the same as
    the selector's: accuracy vs the human majority, kappa, per label, ceiling)."""
    url = reverse("analysis_api:metaeval", args=[setup.dataset.pk])
    client = api_client_for(researcher)
    resp = client.get(url, {"n_boot": N_BOOT})
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["runs"] == []
    assert body["classification"] == json.loads(json.dumps(_computed(setup)))
    crit = body["classification"]["criteria"][0]
    judge = crit["judges"][str(setup.runs[0].pk)]
    assert {"accuracy", "kappa", "per_label", "confusion"} <= set(judge)
    assert "ceiling" in crit["humans"]
    only_a = client.get(url, {"crun": setup.runs[0].pk, "n_boot": N_BOOT}).json()
    assert [r["id"] for r in only_a["classification"]["runs"]] == [setup.runs[0].pk]
    for bad, field in (({"crun": "x"}, "crun"), ({"crun": 999999}, "crun")):
        refused = client.get(url, bad)
        assert refused.status_code == 400, bad
        assert field in json.dumps(refused.json())
    # Asking for pairwise runs the dataset lacks is still refused, naming `run`.
    refused = client.get(url, {"run": 999999})
    assert refused.status_code == 400 and "run" in json.dumps(refused.json())
    assert api_client_for(rater).get(url).status_code == 403
    assert api_client_for(None).get(url).status_code == 401


def test_agreement_command_prints_the_categorical_figures(setup):
    from io import StringIO

    from django.core.management import call_command

    args = [
        "agreement", "--dataset", setup.dataset.name,
        "--campaign", str(setup.campaign.pk),
        "--run", *[str(r.pk) for r in setup.runs],
        "--boot", str(N_BOOT),
    ]  # fmt: skip
    out = StringIO()
    call_command(*args, "--format", "json", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["categorical"] == json.loads(json.dumps(_computed(setup)))
    table = StringIO()
    call_command(*args, stdout=table)
    text = table.getvalue()
    assert "Categorical criteria (judge vs the human majority)" in text
    want = {c["key"]: c for c in _computed(setup)["criteria"]}["consistent"]
    acc = want["judges"][str(setup.runs[0].pk)]["accuracy"]["value"]
    fleiss = want["humans"]["fleiss"]["value"]
    assert f"Fleiss kappa {fleiss:.2f}" in text
    assert f"{acc:.2f}" in text
    assert "  yes" in text and "  no" in text
    # Every criterion is categorical: no empty ordinal table before them.
    assert "OVERALL" not in text and "Spearman" not in text


def test_metaeval_command_gives_the_api_numbers_for_classification_runs(
    api_client_for, researcher, setup
):
    """`manage.py metaeval` answers what the API answers, classification included,
    prints the categorical figures in its table and names `--crun` when refused."""
    from io import StringIO

    from django.core.management import CommandError, call_command

    args = ["metaeval", "--dataset", setup.dataset.name, "--boot", str(N_BOOT)]
    out = StringIO()
    call_command(*args, "--format", "json", stdout=out)
    printed = json.loads(out.getvalue())
    url = reverse("analysis_api:metaeval", args=[setup.dataset.pk])
    assert printed == api_client_for(researcher).get(url, {"n_boot": N_BOOT}).json()
    assert printed["runs"] == []
    assert printed["classification"] == json.loads(json.dumps(_computed(setup)))
    table = StringIO()
    call_command(*args, "--crun", str(setup.runs[0].pk), stdout=table)
    text = table.getvalue()
    assert "no pairwise judge run" in text
    assert "Categorical criteria (judge vs the human majority)" in text
    assert setup.runs[0].name in text and setup.runs[1].name not in text
    with pytest.raises(CommandError, match="--crun"):
        call_command(*args, "--crun", "999999")
