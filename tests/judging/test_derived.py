"""Derived runs: panels (mean, median, majority, weighted) and isotonic calibration,
checked against numpy, scipy and scikit-learn on the same arrays; refusals; the API,
the pages and the command."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command
from scipy.optimize import nnls
from sklearn.isotonic import IsotonicRegression

from annotation.models import HumanScore, RaterExclusion
from flaskapp.errors import DomainError
from judging.models import JudgeRun, JudgeScore
from judging.selectors.splits import split_part_by_instruction
from judging.services.derived import judge_run_calibrate, judge_run_panel_create
from judging.services.splits import eval_split_create
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db

SKILLS = ("comprehension", "factuality")
MODELS = ("alpha", "beta")
N = 12


def _tables(seed: int = 0):
    rng = np.random.default_rng(seed)
    human = {}
    for i in range(N):
        for m in MODELS:
            for k in SKILLS:
                human[(i, m, k)] = [int(v) for v in rng.integers(1, 6, 3)]
    judges = []
    for j in range(3):
        table = {}
        for (i, m, k), hs in human.items():
            base = int(np.clip(round(np.mean(hs)) + rng.integers(-1, 2), 1, 5))
            if j == 2 and (i + len(m)) % 3 == 0:
                # several samples, one N/A among them
                table[(i, m, k)] = [base, int(rng.integers(1, 6)), None]
            elif j == 1 and i == 0 and m == "alpha":
                table[(i, m, k)] = None  # N/A
            else:
                table[(i, m, k)] = base
        judges.append(table)
    return human, judges


@pytest.fixture
def setup(researcher):
    human, judges = _tables()
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=judges,
        n_instructions=N,
        models=MODELS,
        name="derived",
    )
    s.human, s.judges = human, judges
    return s


@pytest.fixture
def split_setup(setup, researcher):
    eval_split_create(dataset=setup.dataset, user=researcher, test_fraction=0.4, seed=3)
    parts = split_part_by_instruction(dataset=setup.dataset)
    setup.part = {
        i: parts[setup.responses[(i, MODELS[0])].instruction_id] for i in range(N)
    }
    assert set(setup.part.values()) == {"dev", "test"}
    return setup


def _run_value(samples) -> float | None:
    """One run's score of an item: the median of its numeric samples, half up."""
    samples = samples if isinstance(samples, list) else [samples]
    numeric = [s for s in samples if s is not None]
    return None if not numeric else float(np.floor(np.median(numeric) + 0.5))


def _stored(run) -> dict:
    return {
        (r.response_id, r.skill.key): r.score
        for r in JudgeScore.objects.filter(run=run).select_related("skill")
    }


def _mode_toward_median(values) -> int:
    uniq, counts = np.unique(values, return_counts=True)
    tied = uniq[counts == counts.max()]
    med = np.median(values)
    dist = np.abs(tied - med)
    near = tied[dist == dist.min()]
    return int(near.max())


def _expected(setup, method):
    out = {}
    for item in setup.human:
        vals = [_run_value(j[item]) for j in setup.judges]
        vals = np.array([v for v in vals if v is not None])
        i, m, k = item
        rid = setup.responses[(i, m)].pk
        if not len(vals):
            out[(rid, k)] = None
        elif method == "mean":
            out[(rid, k)] = int(np.floor(vals.mean() + 0.5))
        elif method == "median":
            out[(rid, k)] = int(np.floor(np.median(vals) + 0.5))
        else:
            out[(rid, k)] = _mode_toward_median(vals)
    return out


@pytest.mark.parametrize("method", ["mean", "median", "majority"])
def test_panel_matches_numpy(setup, researcher, method):
    run = judge_run_panel_create(
        user=researcher,
        dataset=setup.dataset,
        run_ids=[r.pk for r in setup.runs],
        method=method,
    )
    assert run.kind == JudgeRun.Kind.DERIVED
    assert run.status == JudgeRun.Status.COMPLETED
    assert run.settings_snapshot["method"] == method
    assert run.settings_snapshot["runs"] == [r.pk for r in setup.runs]
    assert method in run.source_note
    assert _stored(run) == _expected(setup, method)


def test_panel_majority_breaks_ties_toward_the_median(setup, researcher):
    """Scores 1, 2, 4, 4, 5 -> 4; scores 2, 4 -> equally near 3 -> the higher."""
    from judging.panels import combine

    assert combine([1, 2, 4, 4, 5], method="majority", low=1, high=5) == 4
    assert combine([2, 4], method="majority", low=1, high=5) == 4
    assert combine([1, 2, 2, 5, 5], method="majority", low=1, high=5) == 2
    assert combine([3, 1, 1, 3], method="majority", low=0, high=1, ordinal=False) == 3


def _dev_arrays(setup, human=None):
    human = human or setup.human
    rows, target = [], []
    for item, hs in sorted(human.items()):
        if setup.part[item[0]] != "dev":
            continue
        vals = [_run_value(j[item]) for j in setup.judges]
        if any(v is None for v in vals):
            continue
        rows.append(vals)
        target.append(np.mean(hs))
    return np.array(rows), np.array(target)


def test_weighted_panel_weights_are_nnls_on_dev_items_only(split_setup, researcher):
    s = split_setup
    run_ids = [r.pk for r in s.runs]
    run = judge_run_panel_create(
        user=researcher, dataset=s.dataset, run_ids=run_ids, method="weighted"
    )
    a, y = _dev_arrays(s)
    w, _ = nnls(a, y)
    w = w / w.sum()
    snap = run.settings_snapshot
    got = np.array([snap["weights"][str(r)] for r in run_ids])
    np.testing.assert_allclose(got, w, atol=1e-9)
    assert abs(got.sum() - 1) < 1e-9 and (got >= 0).all()
    assert snap["split_id"] == s.dataset.eval_split.pk
    assert snap["fit"]["n_dev_items"] == len(y)
    dev_responses = {r for r, _ in snap["fit"]["dev_items"]}
    assert all(
        s.part[i] == "dev"
        for (i, m), resp in s.responses.items()
        if resp.pk in dev_responses
    )
    # every item's score: the weighted mean of the runs that scored it
    for i, m, k in s.human:
        vals = [_run_value(j[(i, m, k)]) for j in s.judges]
        present = [(wi, v) for wi, v in zip(w, vals, strict=True) if v is not None]
        ws = np.array([p[0] for p in present])
        vs = np.array([p[1] for p in present])
        expected = int(np.floor(ws @ vs / ws.sum() + 0.5))
        assert _stored(run)[(s.responses[(i, m)].pk, k)] == expected

    # A test item's human score changes: the same weights.
    test_i = next(i for i in range(N) if s.part[i] == "test")
    resp = s.responses[(test_i, "alpha")]
    changed = HumanScore.objects.filter(assignment__response=resp).update(score=1)
    assert changed
    again = judge_run_panel_create(
        user=researcher, dataset=s.dataset, run_ids=run_ids, method="weighted"
    )
    assert again.settings_snapshot["weights"] == snap["weights"]
    # ... while a dev item's change moves them.
    dev_i = next(i for i in range(N) if s.part[i] == "dev")
    HumanScore.objects.filter(assignment__response=s.responses[(dev_i, "beta")]).update(
        score=5
    )
    moved = judge_run_panel_create(
        user=researcher, dataset=s.dataset, run_ids=run_ids, method="weighted"
    )
    assert moved.settings_snapshot["weights"] != snap["weights"]


def test_weighted_panel_leaves_out_excluded_raters(split_setup, researcher):
    s = split_setup
    RaterExclusion.objects.create(
        campaign=s.campaign,
        rater=s.raters[0],
        kind=RaterExclusion.Kind.EXCLUDE,
        reason="test",
        created_by=researcher,
    )
    run = judge_run_panel_create(
        user=researcher,
        dataset=s.dataset,
        run_ids=[r.pk for r in s.runs],
        method="weighted",
    )
    human = {k: v[1:] for k, v in s.human.items()}
    a, y = _dev_arrays(s, human)
    w, _ = nnls(a, y)
    got = [run.settings_snapshot["weights"][str(r.pk)] for r in s.runs]
    np.testing.assert_allclose(got, w / w.sum(), atol=1e-9)


def test_calibration_matches_sklearn_isotonic(split_setup, researcher):
    s = split_setup
    source = s.runs[2]  # the run with several samples and an N/A among them
    run = judge_run_calibrate(user=researcher, run=source)
    snap = run.settings_snapshot
    assert run.kind == JudgeRun.Kind.DERIVED and snap["method"] == "isotonic"
    stored = _stored(run)
    for k in SKILLS:
        x, y = [], []
        for (i, m, key), hs in s.human.items():
            v = _run_value(s.judges[2][(i, m, key)])
            if key == k and s.part[i] == "dev" and v is not None:
                x.append(v)
                y.append(np.mean(hs))
        iso = IsotonicRegression(
            out_of_bounds="clip", increasing=True, y_min=1, y_max=5
        )
        iso.fit(np.array(x), np.array(y))
        fitted = iso.predict(np.arange(1, 6, dtype=float))
        crit = snap["criteria"][k]
        assert crit["n_dev_items"] == len(x)
        np.testing.assert_allclose(
            [crit["fitted"][str(v)] for v in range(1, 6)], fitted, atol=1e-9
        )
        mapping = {
            v: int(np.clip(np.floor(f + 0.5), 1, 5))
            for v, f in zip(range(1, 6), fitted, strict=True)
        }
        assert crit["map"] == {str(v): c for v, c in mapping.items()}
        # every item, dev and test, goes through the map
        for i, m, key in s.human:
            if key != k:
                continue
            v = _run_value(s.judges[2][(i, m, key)])
            got = stored[(s.responses[(i, m)].pk, k)]
            assert got == (None if v is None else mapping[int(v)])


def test_derived_run_is_evaluated_by_the_agreement(split_setup, researcher):
    from analysis.selectors.agreement import agreement_compute

    s = split_setup
    run = judge_run_calibrate(user=researcher, run=s.runs[0])
    result = agreement_compute(
        dataset=s.dataset,
        campaign_ids=[s.campaign.pk],
        run_ids=[run.pk],
        slice_dim="split",
        slice_value="dev",
        n_boot=0,
        use_cache=False,
    )
    assert result.row("skill:factuality").judge(run.pk).items > 0


# --- Refusals -----------------------------------------------------------------------


def _counts():
    return JudgeRun.objects.count(), JudgeScore.objects.count()


def _refused(call, field: str, words: str):
    before = _counts()
    with pytest.raises(DomainError) as exc:
        call()
    assert field in {p.field for p in exc.value.problems}, exc.value
    assert words in str(exc.value)
    assert _counts() == before
    return exc.value


def test_panel_refuses_bad_input_and_writes_nothing(setup, researcher):
    s = setup
    ids = [r.pk for r in s.runs]
    other = make_agreement_setup(
        researcher,
        human={(0, "alpha", "factuality"): [3]},
        judges=[{(0, "alpha", "factuality"): 3}],
        n_instructions=1,
        name="other",
    )
    pairwise = JudgeRun.objects.create(
        dataset=s.dataset, kind=JudgeRun.Kind.PAIRWISE, status="completed"
    )

    def panel(run_ids, method="mean"):
        return lambda: judge_run_panel_create(
            user=researcher, dataset=s.dataset, run_ids=run_ids, method=method
        )

    _refused(panel(ids[:1]), "run_ids", "at least 2 runs")
    _refused(panel([ids[0], other.runs[0].pk]), "run_ids", "is of dataset 'other'")
    _refused(panel([ids[0], pairwise.pk]), "run_ids", "pairwise")
    _refused(panel([ids[0], 999999]), "run_ids", "no run with id 999999")
    _refused(panel(ids, "vote"), "method", "'vote' is not a method")
    # weighted without a split
    _refused(panel(ids, "weighted"), "method", "no development / test split")


def test_panel_weighted_refuses_without_human_dev_items(split_setup, researcher):
    s = split_setup
    HumanScore.objects.all().delete()
    _refused(
        lambda: judge_run_panel_create(
            user=researcher,
            dataset=s.dataset,
            run_ids=[r.pk for r in s.runs],
            method="weighted",
        ),
        "run_ids",
        "no item of the development split",
    )


def test_calibrate_refuses_without_split_or_dev_items(setup, researcher):
    s = setup
    _refused(
        lambda: judge_run_calibrate(user=researcher, run=s.runs[0]),
        "run",
        "no development / test split",
    )
    eval_split_create(dataset=s.dataset, user=researcher, test_fraction=0.4, seed=3)
    HumanScore.objects.all().delete()
    _refused(
        lambda: judge_run_calibrate(user=researcher, run=s.runs[0]),
        "run",
        "nothing to fit",
    )
    _refused(
        lambda: judge_run_calibrate(
            user=researcher, run=s.runs[0], campaign_ids=[999999]
        ),
        "campaign_ids",
        "no pointwise campaign",
    )


def test_services_refuse_a_rater(setup, rater):
    before = _counts()
    with pytest.raises(PermissionDenied):
        judge_run_panel_create(
            user=rater,
            dataset=setup.dataset,
            run_ids=[r.pk for r in setup.runs],
            method="mean",
        )
    with pytest.raises(PermissionDenied):
        judge_run_calibrate(user=rater, run=setup.runs[0])
    assert _counts() == before


def test_majority_panel_combines_categorical_criteria(researcher):
    from tests.analysis.scale_data import make_rubric, make_scale_setup

    rubric = make_rubric(
        "cat-rubric",
        [
            {"key": "safe", "labels": ["yes", "no", "unsure"]},
            {"key": "q", "low": 0, "high": 4},
        ],
    )
    human = {(i, "alpha", "safe"): [0] for i in range(3)}
    judges = [
        {
            (0, "alpha", "safe"): 0,
            (1, "alpha", "safe"): 1,
            (2, "alpha", "safe"): 2,
            (0, "alpha", "q"): 4,
        },
        {
            (0, "alpha", "safe"): 1,
            (1, "alpha", "safe"): 1,
            (2, "alpha", "safe"): 0,
            (0, "alpha", "q"): 0,
        },
        {
            (0, "alpha", "safe"): 0,
            (1, "alpha", "safe"): 2,
            (2, "alpha", "safe"): 1,
            (0, "alpha", "q"): 1,
        },
    ]
    s = make_scale_setup(
        rubric, human=human, judges=judges, n_instructions=3, models=("alpha",)
    )
    ids = [r.pk for r in s.runs]
    run = judge_run_panel_create(
        user=researcher, dataset=s.dataset, run_ids=ids, method="majority"
    )
    got = _stored(run)
    r = {i: s.responses[(i, "alpha")].pk for i in range(3)}
    # 0,1,0 -> 0; 1,1,2 -> 1; 2,0,1 (all tied) -> the first run's label, 2
    assert got[(r[0], "safe")] == 0 and got[(r[1], "safe")] == 1
    assert got[(r[2], "safe")] == 2
    assert got[(r[0], "q")] == 1  # 4, 0, 1: all tied, nearest the median 1
    mean = judge_run_panel_create(
        user=researcher, dataset=s.dataset, run_ids=ids, method="mean"
    )
    assert set(mean.settings_snapshot["left_out"]) == {"safe"}
    assert {k for _, k in _stored(mean)} == {"q"}


# --- API, pages, command ------------------------------------------------------------


def test_panel_api(setup, researcher, api_client_for):
    ids = [r.pk for r in setup.runs]
    client = api_client_for(researcher)
    res = client.post(
        "/api/runs/panel/",
        {"dataset": setup.dataset.pk, "run_ids": ids, "method": "median"},
        format="json",
    )
    assert res.status_code == 201, res.content
    body = res.json()
    run = JudgeRun.objects.get(pk=body["id"])
    assert run.kind == "derived" and body["recipe"]["method"] == "median"
    before = _counts()
    bad = client.post(
        "/api/runs/panel/",
        {"dataset": setup.dataset.pk, "run_ids": ids[:1], "method": "nope"},
        format="json",
    )
    assert bad.status_code == 400
    fields = {p["field"] for p in bad.json()["problems"]}
    assert fields == {"run_ids", "method"}
    assert _counts() == before


def test_calibrate_api(split_setup, researcher, api_client_for):
    client = api_client_for(researcher)
    run = split_setup.runs[0]
    res = client.post(f"/api/runs/{run.pk}/calibrate/", {}, format="json")
    assert res.status_code == 201, res.content
    assert res.json()["recipe"]["method"] == "isotonic"
    assert (
        client.post("/api/runs/999999/calibrate/", {}, format="json").status_code == 404
    )


def test_calibrate_api_refuses_without_split(setup, researcher, api_client_for):
    res = api_client_for(researcher).post(
        f"/api/runs/{setup.runs[0].pk}/calibrate/", {}, format="json"
    )
    assert res.status_code == 400
    assert res.json()["problems"][0]["field"] == "run"


@pytest.mark.parametrize("who", ["rater", "anonymous"])
def test_endpoints_refuse_raters_and_anonymous(
    setup, rater, who, api_client_for, client_for
):
    user = rater if who == "rater" else None
    ids = [r.pk for r in setup.runs]
    before = _counts()
    api = api_client_for(user)
    codes = {
        api.post(
            "/api/runs/panel/",
            {"dataset": setup.dataset.pk, "run_ids": ids, "method": "mean"},
            format="json",
        ).status_code,
        api.post(f"/api/runs/{ids[0]}/calibrate/", {}, format="json").status_code,
    }
    assert codes <= ({403} if user else {401, 403})
    page = client_for(user)
    new = page.get("/runs/panel/new/")
    post = page.post(
        "/runs/panel/new/",
        {"dataset": setup.dataset.pk, "run_ids": ids, "method": "mean"},
    )
    calibrate = page.post(f"/runs/{ids[0]}/calibrate/")
    for res in (new, post, calibrate):
        if user:
            assert res.status_code == 403
        else:
            assert res.status_code == 302 and "/login/" in res["Location"]
    assert _counts() == before


def test_panel_page(setup, researcher, client_for):
    page = client_for(researcher)
    res = page.get("/runs/panel/new/", {"dataset": setup.dataset.pk})
    assert res.status_code == 200
    text = res.content.decode()
    for run in setup.runs:
        assert f'value="{run.pk}"' in text
    ids = [r.pk for r in setup.runs]
    bad = page.post(
        "/runs/panel/new/",
        {"dataset": setup.dataset.pk, "run_ids": ids[:1], "method": "mean"},
    )
    assert bad.status_code == 400 and "at least 2 runs" in bad.content.decode()
    ok = page.post(
        "/runs/panel/new/",
        {"dataset": setup.dataset.pk, "run_ids": ids, "method": "mean"},
    )
    assert ok.status_code == 302
    run = JudgeRun.objects.get(kind="derived")
    assert ok["Location"] == f"/runs/{run.pk}/"
    detail = page.get(ok["Location"]).content.decode()
    assert 'id="run-recipe"' in detail and "Panel of" in detail


def test_calibrate_button(split_setup, researcher, client_for):
    page = client_for(researcher)
    run = split_setup.runs[0]
    detail = page.get(f"/runs/{run.pk}/").content.decode()
    assert f'action="/runs/{run.pk}/calibrate/"' in detail
    res = page.post(f"/runs/{run.pk}/calibrate/")
    derived = JudgeRun.objects.get(kind="derived")
    assert res.status_code == 302 and res["Location"] == f"/runs/{derived.pk}/"


def test_calibrate_button_without_split_says_why(setup, researcher, client_for):
    page = client_for(researcher)
    run = setup.runs[0]
    res = page.post(f"/runs/{run.pk}/calibrate/", follow=True)
    assert "no development / test split" in res.content.decode()
    assert not JudgeRun.objects.filter(kind="derived").exists()


def test_derive_run_command(split_setup, researcher):
    s = split_setup
    out = io.StringIO()
    call_command(
        "derive_run",
        "panel",
        "--dataset",
        s.dataset.name,
        "--runs",
        *[str(r.pk) for r in s.runs],
        "--method",
        "weighted",
        "--user",
        researcher.username,
        stdout=out,
    )
    panel_id = int(out.getvalue().splitlines()[0])
    assert JudgeRun.objects.get(pk=panel_id).settings_snapshot["method"] == "weighted"
    out = io.StringIO()
    call_command("derive_run", "calibrate", "--run", str(panel_id), stdout=out)
    calibrated = JudgeRun.objects.get(pk=int(out.getvalue().splitlines()[0]))
    assert calibrated.settings_snapshot["runs"] == [panel_id]
    with pytest.raises(CommandError, match="at least 2 runs"):
        call_command(
            "derive_run", "panel", "--dataset", s.dataset.name, "--runs", "1",
            "--method", "mean",
        )  # fmt: skip
