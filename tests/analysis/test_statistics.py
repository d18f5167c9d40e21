"""The registry of agreement statistics (`analysis.statistics`): adding a statistic
is one function plus one entry, and every place that lists statistics shows it
(the computed result, the dashboard's full table and CSV, the `agreement`
command's json and table, the glossary); removed, it is gone from all of them."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from analysis import statistics
from analysis.selectors.agreement import agreement_compute
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db

MODELS = ("alpha", "beta")
N_BOOT = 40


def toy_miss(t) -> np.ndarray:
    """Share of items where the judge misses the raters' rounded median."""
    return t.share(t.judge != t.hround)


TOY = statistics.Statistic(
    key="toy_miss",
    side="judge",
    label="Toy miss rate",
    abbreviation="toy",
    short="toy miss",
    format="share",
    better="lower",
    undefined_when="no items",
    glossary="Share of items where the judge misses the raters' median (a test).",
    compute=toy_miss,
    places=frozenset({"table", "command"}),
)


@pytest.fixture
def toy():
    statistics.register(TOY)
    try:
        yield TOY
    finally:
        statistics.unregister(TOY.key)


@pytest.fixture
def setup(researcher):
    rng = np.random.default_rng(5)
    human, judge = {}, {}
    for i in range(8):
        for mi, m in enumerate(MODELS):
            for key in ("comprehension", "factuality"):
                q = 2 + 2 * mi + rng.normal(0, 0.8)
                human[(i, m, key)] = [
                    int(np.clip(round(q + rng.normal(0, 0.5)), 1, 5)) for _ in range(3)
                ]
                judge[(i, m, key)] = int(np.clip(round(q + rng.normal(0, 0.8)), 1, 5))
    return make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=8, models=MODELS
    )


def _compute(s):
    return agreement_compute(
        dataset=s.dataset,
        campaign_ids=[s.campaign.pk],
        run_ids=[s.runs[0].pk],
        n_boot=N_BOOT,
    )


def _outputs(client, s) -> dict:
    """What a researcher sees of the statistics: the page (full table), its CSV,
    the command's json and table outputs."""
    params = {"campaign": s.campaign.pk, "run": s.runs[0].pk, "n_boot": N_BOOT}
    page = client.get(
        reverse("analysis:agreement", args=[s.dataset.pk]), {**params, "full": 1}
    )
    assert page.status_code == 200
    table_csv = client.get(
        reverse("analysis:agreement-csv", args=[s.dataset.pk, "table"]), params
    )
    assert table_csv.status_code == 200
    out = {}
    for fmt in ("json", "table"):
        text = io.StringIO()
        call_command(
            "agreement",
            "--dataset",
            s.dataset.name,
            "--run",
            str(s.runs[0].pk),
            "--boot",
            str(N_BOOT),
            "--format",
            fmt,
            stdout=text,
        )
        out[fmt] = text.getvalue()
    return {
        "page": page.content.decode(),
        "csv": list(csv.DictReader(io.StringIO(table_csv.content.decode()))),
        "json": json.loads(out["json"]),
        "table": out["table"],
    }


def test_a_registered_statistic_is_computed_shown_and_explained(
    client_for, researcher, setup, toy
):
    result = _compute(setup)
    rid = str(setup.runs[0].pk)
    overall = result.row("overall").judge(rid)
    miss, exact = overall.stat("toy_miss"), overall.stat("exact")
    # computed on the same resamples as `exact`: its complement, interval included
    assert miss.value == pytest.approx(1 - exact.value)
    assert miss.ci == pytest.approx((1 - exact.ci[1], 1 - exact.ci[0]))
    assert miss.n == exact.n > 0
    # after the registry's other judge statistics, in the result's key order
    keys = [k for k in overall.to_dict() if k in statistics.keys("judge")]
    assert keys == list(statistics.keys("judge")) and keys[-1] == "toy_miss"

    seen = _outputs(client_for(researcher), setup)
    page = seen["page"]
    assert 'data-sort="' + rid + '.toy_miss"' in page
    assert 'title="Toy miss rate"' in page
    assert f"{100 * miss.value:.0f}%" in page
    # the glossary lists it with its text
    assert "<dt>Toy miss rate</dt><dd>Share of items where the judge misses" in page
    csv_rows = [
        r for r in seen["csv"] if r["statistic"] == "toy_miss" and r["row"] == "overall"
    ]
    assert len(csv_rows) == 1
    assert float(csv_rows[0]["value"]) == pytest.approx(miss.value)
    command_overall = next(r for r in seen["json"]["rows"] if r["key"] == "overall")[
        "judges"
    ][rid]
    assert command_overall["toy_miss"]["value"] == pytest.approx(miss.value)
    header = next(
        line for line in seen["table"].splitlines() if line.startswith("skill")
    )
    assert re.search(r"leniency +toy miss +flag$", header)
    assert f"{miss.value:.2f}" in next(
        line for line in seen["table"].splitlines() if line.startswith("OVERALL")
    )


def test_an_unregistered_statistic_is_gone_everywhere(client_for, researcher, setup):
    statistics.register(TOY)
    try:
        assert _compute(setup).rows[0].judge(setup.runs[0].pk).stat("toy_miss")
    finally:
        statistics.unregister(TOY.key)
    # the cached result of the registry with the toy is not served after it
    result = _compute(setup)
    assert all(
        "toy_miss" not in j.stats for r in result.rows for j in r.judges.values()
    )
    seen = _outputs(client_for(researcher), setup)
    assert "toy_miss" not in seen["page"] and "Toy miss rate" not in seen["page"]
    assert not [r for r in seen["csv"] if r["statistic"] == "toy_miss"]
    assert "toy_miss" not in json.dumps(seen["json"])
    assert "toy miss" not in seen["table"]


def test_the_registry_lists_each_statistic_once_per_side_with_its_places():
    for side in statistics.SIDES:
        keys = statistics.keys(side)
        assert len(keys) == len(set(keys))
    assert statistics.headline().key == "qwk"
    assert [s.key for s in statistics.shown_in("command")] == [
        "spearman",
        "kendall",
        "qwk",
        "exact",
        "leniency",
    ]
    with pytest.raises(ValueError, match="registered already"):
        statistics.register(statistics.get("qwk"))
    with pytest.raises(ValueError, match="format"):
        statistics.Statistic(**{**TOY.__dict__, "format": "percent"})
