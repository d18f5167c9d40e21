"""The typed agreement result (`analysis.selectors.agreement.result`):
`agreement_compute` returns it, typed all the way down (the chart parts too), and
its JSON (`to_dict`, the API's and the command's body) reads back into an equal
result (`of(to_dict(r)) == r`) and is written back key for key and in order
(`to_dict(of(d)) == d`), on ordinary rows, pooled rows over mixed scales, a
judge-vs-judge reference and a slice, with the API's categorical section added; a
cached result is the computed one."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, fields, is_dataclass

import pytest

from analysis import statistics
from analysis.selectors.agreement import agreement_compute
from analysis.selectors.agreement.result import (
    AgreementResult,
    Ceiling,
    JudgeCell,
    ModelMean,
    ProfileEntry,
    Profiles,
    ReferenceMean,
    Row,
    RowScale,
    ScatterPoint,
    Stat,
)
from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.scale_data import make_rubric, make_scale_setup
from tests.analysis.test_agreement_scales import MIXED, tables
from tests.analysis.test_agreement_scales import MODELS as SCALE_MODELS
from tests.analysis.test_views_agreement import MODELS, N_INSTR, score_tables

pytestmark = pytest.mark.django_db


def _round_trip(result: AgreementResult) -> dict:
    """The result's JSON, after checking both round trips; returns the JSON."""
    assert isinstance(result, AgreementResult)
    plain = result.to_dict()
    text = json.dumps(plain)
    back = AgreementResult.of(json.loads(text))
    assert back == result
    assert json.dumps(back.to_dict()) == text
    return plain


def _no_dict_left(obj, path="result") -> None:
    """Every part of the result is a dataclass, a tuple, a scalar or a mapping of
    keys to typed parts: no JSON-form dict of figures is left inside."""
    if is_dataclass(obj):
        for f in fields(obj):
            if (type(obj).__name__, f.name) in {
                ("AgreementResult", "exclusions"),  # annotation's note, as it is
                ("AgreementResult", "extra"),
            }:
                continue
            _no_dict_left(getattr(obj, f.name), f"{path}.{f.name}")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            assert not isinstance(v, dict | list), f"{path}[{k!r}] is JSON"
            _no_dict_left(v, f"{path}[{k!r}]")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            assert not isinstance(v, dict | list), f"{path}[{i}] is JSON"
            _no_dict_left(v, f"{path}[{i}]")


@pytest.fixture
def typed_setup(researcher):
    human, judge_a, judge_b = score_tables()
    return make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="typed-set",
        difficulty=[1, 1, 2, 2, 3, 3, 4, 4, 5, None],
    )


def test_the_typed_result_reads_and_writes_every_figure(typed_setup):
    s = typed_setup
    runs = [r.pk for r in s.runs]
    result = agreement_compute(
        dataset=s.dataset, campaign_ids=[s.campaign.pk], run_ids=runs, n_boot=30
    )
    plain = _round_trip(result)
    overall = result.row("overall")
    raw = next(r for r in plain["rows"] if r["key"] == "overall")
    cell = overall.judge(runs[1])
    assert list(cell.stats) == list(statistics.keys("judge"))
    assert list(overall.human.stats) == list(statistics.keys("raters"))
    qwk = raw["judges"][str(runs[1])]["qwk"]
    assert cell.stat("qwk") == Stat(qwk["value"], qwk["n"], tuple(qwk["ci"]))
    assert (
        cell.scored_by_both == raw["judges"][str(runs[1])]["counts"]["scored_by_both"]
    )
    assert result.run_labels == [(str(r["id"]), r["label"]) for r in plain["runs"]]
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
    with_section = _round_trip(result.with_extra(categorical={"criteria": []}))
    assert list(with_section)[-2:] == ["rows", "categorical"]


def test_the_result_is_typed_all_the_way_down_charts_parts_too(typed_setup):
    s = typed_setup
    runs = [r.pk for r in s.runs]
    result = agreement_compute(
        dataset=s.dataset, campaign_ids=[s.campaign.pk], run_ids=runs, n_boot=20
    )
    _no_dict_left(result)
    row = result.row("skill:factuality")
    assert isinstance(row, Row) and isinstance(row.scale, RowScale)
    assert (row.scale.low, row.scale.high, row.scale.mixed) == (1, 5, False)
    cell = row.judge(runs[0])
    assert isinstance(cell, JudgeCell) and isinstance(cell.human, Ceiling)
    assert cell.models.models and all(
        isinstance(m, ModelMean) for m in cell.models.models
    )
    assert {m.model for m in cell.models.models} == set(MODELS)
    assert cell.scatter and all(isinstance(p, ScatterPoint) for p in cell.scatter)
    assert sum(p.n for p in cell.scatter) == cell.scored_by_both
    assert isinstance(row.profiles, Profiles)
    shared = row.profiles.view("shared")
    assert {e.model for e in shared} == set(MODELS)
    assert all(isinstance(e, ProfileEntry) and e.n is not None for e in shared)
    assert all(e.n is None for e in row.profiles.view("all"))
    assert set(shared[0].judges) == {str(r) for r in runs}
    # the raters' own model means are their "all items" profile
    assert row.human.models == tuple(
        ReferenceMean(e.model, e.reference.n, e.reference)
        for e in row.profiles.view("all")
    )
    with pytest.raises(FrozenInstanceError):
        cell.flag = None  # the cells are frozen; only a row is filled in steps


def test_a_cached_result_equals_the_computed_one(typed_setup):
    s = typed_setup
    args = {
        "dataset": s.dataset,
        "campaign_ids": [s.campaign.pk],
        "run_ids": [r.pk for r in s.runs],
        "n_boot": 20,
    }
    first = agreement_compute(**args)
    cached = agreement_compute(**args)
    assert isinstance(cached, AgreementResult) and cached == first
    assert cached.to_dict() == agreement_compute(**args, use_cache=False).to_dict()


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
    _round_trip(result)
    _no_dict_left(result)
    pooled = result.row("overall")
    assert pooled.scale.mixed and pooled.scale.scales == ("0-4", "1-10")
    assert pooled.note and pooled.judge(s.runs[0].pk).stat("qwk").value is None
    assert pooled.profiles_scale == "normalised"
