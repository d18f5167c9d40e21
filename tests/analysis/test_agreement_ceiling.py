"""The human ceiling is one figure per campaign selection: computed on every item with
2+ numeric human scores, whatever runs are shown and in whatever order; each run's
comparison states its own item count."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from analysis.selectors.agreement import agreement_compute
from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.test_agreement_selectors import MODELS, N_INSTR, random_tables

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(researcher):
    """Judge B scores only the first four instructions: the runs' item sets differ."""
    human, judge_a, judge_b = random_tables(seed=5)
    judge_b = {k: v for k, v in judge_b.items() if k[0] < 4}
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="ceiling-set",
    )
    s.human = human
    return s


def compute(s, runs, **kw):
    return agreement_compute(
        dataset=s.dataset,
        campaign_ids=[s.campaign.pk],
        run_ids=[r.pk for r in runs],
        n_boot=100,
        **kw,
    )


def multi_rated_matrix(human, skills):
    """Raters x items of every item with 2+ numeric scores, independently built."""
    cols = []
    for (_, _, key), scores in human.items():
        nums = [x for x in scores if x not in ("-", None)]
        if key in skills and len(nums) >= 2:
            cols.append([np.nan if x in ("-", None) else x for x in scores])
    return np.array(cols, float).T


def test_the_order_of_the_runs_does_not_change_the_ceiling(setup):
    a, b = setup.runs
    ab, ba = compute(setup, [a, b]), compute(setup, [b, a])
    only_b = compute(setup, [b])
    for r1, r2, r3 in zip(ab.rows, ba.rows, only_b.rows, strict=True):
        assert r1.key == r2.key == r3.key
        assert r1.human == r2.human == r3.human, r1.key
    # while the two runs' own comparisons stand on different item counts
    overall = ab.row("overall")
    n_a = overall.judge(a.pk).scored_by_both
    n_b = overall.judge(b.pk).scored_by_both
    assert n_b < n_a


def test_the_ceiling_equals_krippendorff_on_every_multi_rated_item(setup):
    res = compute(setup, [setup.runs[1]])
    skills = ("comprehension", "factuality", "readability")
    for key, wanted in [*((f"skill:{k}", {k}) for k in skills), ("overall", skills)]:
        mat = multi_rated_matrix(setup.human, set(wanted))
        ceiling = res.row(key).human
        assert ceiling.n_items_multi_rated == mat.shape[1]
        assert ceiling.stat("alpha_ordinal").n == mat.shape[1]
        assert ceiling.stat("alpha_ordinal").value == pytest.approx(
            krippendorff.alpha(
                reliability_data=mat,
                level_of_measurement="ordinal",
                value_domain=[1, 2, 3, 4, 5],
            )
        )
        assert ceiling.stat("alpha_interval").value == pytest.approx(
            krippendorff.alpha(reliability_data=mat, level_of_measurement="interval")
        )
        lo, hi = ceiling.stat("alpha_ordinal").ci
        assert lo <= ceiling.stat("alpha_ordinal").value <= hi
        assert "2 or more" in ceiling.item_set


def test_the_ceiling_follows_the_slice_not_the_runs(setup):
    sliced = compute(setup, [setup.runs[0]], slice_dim="model", slice_value="beta")
    row = sliced.row("skill:factuality")
    beta = {k: v for k, v in setup.human.items() if k[1] == "beta"}
    mat = multi_rated_matrix(beta, {"factuality"})
    assert row.human.n_items_multi_rated == mat.shape[1]
    assert row.human.stat("alpha_ordinal").value == pytest.approx(
        krippendorff.alpha(
            reliability_data=mat,
            level_of_measurement="ordinal",
            value_domain=[1, 2, 3, 4, 5],
        )
    )


def test_the_command_gives_one_ceiling_whatever_the_run_order(setup):
    import io
    import json

    from django.core.management import call_command

    a, b = (str(r.pk) for r in setup.runs)
    outs = []
    for order in ([a, b], [b, a]):
        out = io.StringIO()
        call_command(
            "agreement", "--dataset", "ceiling-set", "--run", *order,
            "--format", "json", "--boot", "30", stdout=out,
        )  # fmt: skip
        outs.append({r["key"]: r["human"] for r in json.loads(out.getvalue())["rows"]})
    assert outs[0] == outs[1]
