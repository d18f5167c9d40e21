"""The typed agreement result (`analysis.selectors.agreement.result`): it reads every
figure of `agreement_compute`'s JSON and writes the same JSON back, key for key and
in order, on ordinary rows, pooled rows over mixed scales, a judge-vs-judge
reference and a slice, with the API's categorical section added."""

from __future__ import annotations

import json

import pytest

from analysis import statistics
from analysis.selectors.agreement import agreement_compute
from analysis.selectors.agreement.result import AgreementResult, Stat
from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.scale_data import make_rubric, make_scale_setup
from tests.analysis.test_agreement_scales import MIXED, tables
from tests.analysis.test_agreement_scales import MODELS as SCALE_MODELS
from tests.analysis.test_views_agreement import MODELS, N_INSTR, score_tables

pytestmark = pytest.mark.django_db


def _round_trip(result: dict) -> AgreementResult:
    typed = AgreementResult.of(result)
    assert json.dumps(typed.to_dict()) == json.dumps(result)
    return typed


def test_the_typed_result_reads_and_writes_every_figure(researcher):
    human, judge_a, judge_b = score_tables()
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="typed-set",
        difficulty=[1, 1, 2, 2, 3, 3, 4, 4, 5, None],
    )
    runs = [r.pk for r in s.runs]
    result = agreement_compute(
        dataset=s.dataset, campaign_ids=[s.campaign.pk], run_ids=runs, n_boot=30
    )
    typed = _round_trip(result)
    overall = typed.row("overall")
    raw = next(r for r in result["rows"] if r["key"] == "overall")
    cell = overall.judge(runs[1])
    assert list(cell.stats) == list(statistics.keys("judge"))
    assert list(overall.human.stats) == list(statistics.keys("raters"))
    qwk = raw["judges"][str(runs[1])]["qwk"]
    assert cell.stat("qwk") == Stat(qwk["value"], qwk["n"], tuple(qwk["ci"]))
    assert (
        cell.scored_by_both == raw["judges"][str(runs[1])]["counts"]["scored_by_both"]
    )
    assert typed.run_labels == [(str(r["id"]), r["label"]) for r in result["runs"]]
    _round_trip(
        agreement_compute(
            dataset=s.dataset, run_ids=[runs[0]], reference_run_id=runs[1], n_boot=30
        )
    )
    _round_trip(
        agreement_compute(
            dataset=s.dataset,
            campaign_ids=[s.campaign.pk],
            run_ids=runs,
            slice_dim="difficulty",
            slice_value="5",
            n_boot=30,
        )
    )
    _round_trip({**result, "categorical": {"criteria": []}})


def test_rows_over_mixed_scales_round_trip(researcher):
    rubric = make_rubric(
        "typed-mixed",
        [
            {"key": "brief", "low": 0, "high": 4, "group": "g"},
            {"key": "deep", "low": 1, "high": 10, "group": "g"},
        ],
        groups=[{"key": "g", "name": "Quality"}],
    )
    human, judge_a, _ = tables(MIXED, seed=5)
    s = make_scale_setup(
        rubric, human=human, judges=[judge_a], n_instructions=10, models=SCALE_MODELS
    )
    result = agreement_compute(
        dataset=s.dataset, campaign_ids=[s.campaign.pk], run_ids=[s.runs[0].pk]
    )
    typed = _round_trip(result)
    pooled = typed.row("overall")
    assert pooled.note and pooled.judge(s.runs[0].pk).stat("qwk").value is None
