"""Pairwise leaderboards: Bradley-Terry against choix, ties, bootstrap, win rates,
length control, refusals, the page, the API and the command."""

from __future__ import annotations

import io
import json
import math

import choix
import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from analysis.selectors.leaderboard import LeaderboardError
from analysis.selectors.leaderboard import pairwise_leaderboard as board_for
from analysis.stats import leaderboard as lb
from annotation.models import HumanPreference, PreferencePair
from judging.models import JudgeRun, PairwiseVerdict
from tests.analysis.agreement_data import make_dataset


def synthetic_votes(k=5, n=2000, seed=1, tie_share=0.15):
    rng = np.random.default_rng(seed)
    strength = np.linspace(-1, 1, k)
    m1 = rng.integers(0, k, n)
    m2 = (m1 + rng.integers(1, k, n)) % k  # never the same model
    p = 1 / (1 + np.exp(-(strength[m1] - strength[m2])))
    out = np.where(rng.random(n) < tie_share, 2, np.where(rng.random(n) < p, 0, 1))
    return [f"m{i}" for i in range(k)], m1, m2, out


def choix_comparisons(m1, m2, out):
    """Each vote twice: a win as two wins, a tie as one win each way."""
    data = []
    for i, j, o in zip(m1.tolist(), m2.tolist(), out.tolist(), strict=True):
        data += [(i, j), (i, j)] if o == 0 else [(j, i), (j, i)] if o == 1 else [
            (i, j), (j, i)]  # fmt: skip
    return data


def choix_theta(k, data):
    theta = choix.ilsr_pairwise(k, data, alpha=0.0, tol=1e-12, max_iter=10_000)
    return theta - theta.mean()


def test_ratings_match_choix_on_the_same_votes():
    models, m1, m2, out = synthetic_votes()
    board = lb.pairwise_leaderboard(models, m1, m2, out, n_boot=0)
    ref = choix_theta(len(models), choix_comparisons(m1, m2, out))
    ours = board.theta_rows[0]
    assert np.argsort(-ours).tolist() == np.argsort(-ref).tolist()
    diffs = ours[:, None] - ours[None, :]
    ref_diffs = ref[:, None] - ref[None, :]
    assert np.abs(diffs - ref_diffs).max() < 1e-4
    values = np.array([r.value for r in board.rating])
    assert values.mean() == pytest.approx(1000.0, abs=1e-9)  # the anchor
    assert np.allclose(values, 400 / math.log(10) * ref + 1000, atol=1e-3)
    # choix's own optimiser, with its prior at the strength ours uses (x2: each
    # vote is written twice), agrees too
    opt = choix.opt_pairwise(
        len(models), choix_comparisons(m1, m2, out), alpha=2 * lb.PRIOR, tol=1e-10
    )
    assert np.abs((opt - opt.mean()) - ours).max() < 1e-4


def test_ties_count_as_half_a_win_to_each_side():
    # A beats B twice, B beats A once, two ties: A scores 2 + 1, B 1 + 1, so the ML
    # estimate has P(A beats B) = 3 / 5 and A is 400 log10(3/2) points above B.
    models = ["A", "B"]
    m1 = np.array([0, 0, 1, 0, 1])
    m2 = np.array([1, 1, 0, 1, 0])
    out = np.array([0, 0, 0, 2, 2])  # the third vote: response 1 (B) won
    board = lb.pairwise_leaderboard(models, m1, m2, out, n_boot=0)
    a, b = (r.value for r in board.rating)
    assert a - b == pytest.approx(400 * math.log10(1.5), abs=1e-4)
    assert (a + b) / 2 == pytest.approx(1000.0)
    assert board.wins.tolist() == [2, 1] and board.losses.tolist() == [1, 2]
    assert board.ties.tolist() == [2, 2]
    assert board.win_rate[0, 1] == pytest.approx(0.6)
    assert board.win_rate[1, 0] == pytest.approx(0.4)


def test_win_rate_matrix_by_hand():
    models = ["x", "y", "z"]
    # x-y: x wins 3, y wins 1; x-z: a tie and a z win; y-z never met
    m1 = np.array([0, 0, 1, 1, 0, 2])
    m2 = np.array([1, 1, 0, 0, 2, 0])
    out = np.array([0, 0, 1, 0, 2, 0])
    count = np.array([1, 1, 1, 1, 1, 1])
    rate, between = lb.win_rate_matrix(lb.vote_cells(models, m1, m2, out, count)[0])
    assert rate[0, 1] == pytest.approx(3 / 4) and rate[1, 0] == pytest.approx(1 / 4)
    assert rate[0, 2] == pytest.approx(0.5 / 2) and rate[2, 0] == pytest.approx(0.75)
    assert np.isnan(rate[1, 2]) and np.isnan(rate[2, 1]) and np.isnan(rate[0, 0])
    assert between[0, 1] == 4 and between[0, 2] == 2 and between[1, 2] == 0


def test_bootstrap_interval_equals_an_explicit_loop_over_the_same_resamples():
    models, m1, m2, out = synthetic_votes(k=4, n=300, seed=3)
    n_boot, seed = 120, 11
    board = lb.pairwise_leaderboard(models, m1, m2, out, n_boot=n_boot, seed=seed)
    cells, _ = lb.vote_cells(models, m1, m2, out)
    resamples = np.vstack(list(lb.resample_blocks(cells, n_boot, seed)))
    assert resamples.shape == (n_boot, cells.count.size)
    assert (resamples.sum(axis=1) == cells.count.sum()).all()  # n votes each
    rows = []
    for w in resamples.astype(int):
        data = []
        for a, b, y, c in zip(cells.a, cells.b, cells.y, w, strict=True):
            one = [(a, b), (a, b)] if y == 1 else [(b, a), (b, a)] if y == 0 else [
                (a, b), (b, a)]  # fmt: skip
            data += one * int(c)
        rows.append(400 / math.log(10) * choix_theta(len(models), data) + 1000)
    rows = np.array(rows)
    lo, hi = np.quantile(rows, [0.025, 0.975], axis=0)
    for j, r in enumerate(board.rating):
        assert r.ci_low == pytest.approx(lo[j], abs=1e-3)
        assert r.ci_high == pytest.approx(hi[j], abs=1e-3)
    ranks = lb.ranks_of(rows)
    assert np.allclose(
        board.p_above, (rows[:, :, None] > rows[:, None, :]).mean(axis=0)
    )
    assert np.allclose(board.rank_ci[:, 0], np.quantile(ranks, 0.025, axis=0))


def test_length_control_recovers_a_planted_length_bias():
    import statsmodels.api as sm

    rng = np.random.default_rng(6)
    k, n, beta = 4, 6000, 0.8
    strength = np.array([0.0, 0.3, 0.6, 0.9])
    verbose = np.array([3.0, 1.0, 1.0, 1.0])  # m0 writes three times as long
    m1 = rng.integers(0, k, n)
    m2 = (m1 + rng.integers(1, k, n)) % k
    l1 = rng.integers(200, 400, n) * verbose[m1]
    l2 = rng.integers(200, 400, n) * verbose[m2]
    d = (l1 - l2) / (l1 + l2)
    rms = np.sqrt(np.mean(d**2))
    eta = strength[m1] - strength[m2] + beta * d / rms
    out = np.where(rng.random(n) < 1 / (1 + np.exp(-eta)), 0, 1)
    board = lb.pairwise_leaderboard(
        [f"m{i}" for i in range(k)], m1, m2, out, length_1=l1, length_2=l2,
        length_control=True, n_boot=200,
    )  # fmt: skip
    b = board.length["beta"]
    assert b.ci_low < beta < b.ci_high and b.ci_low > 0
    # the same logistic regression by statsmodels on the raw votes
    x = np.zeros((n, k))
    x[np.arange(n), m1] += 1
    x[np.arange(n), m2] -= 1
    design = np.column_stack([x[:, 1:], d / rms])
    fit = sm.Logit((out == 0).astype(float), design).fit(disp=0)
    assert b.value == pytest.approx(fit.params[-1], abs=0.02)
    # the verbose, weakest model rises without control and falls back with it
    raw = [r.value for r in board.rating]
    controlled = [r.value for r in board.length["rating"]]
    assert raw[0] > raw[1] and controlled[0] < controlled[1]
    lc_theta = (np.array(controlled) - 1000) / lb.SCALE
    assert np.allclose(lc_theta[1:] - lc_theta[0], fit.params[:-1], atol=0.02)
    assert np.allclose(lc_theta - lc_theta[0], strength - strength[0], atol=0.2)


def test_one_model_and_no_votes_are_refused_naming_the_parameter():
    with pytest.raises(ValueError, match=r"^models: .*at least 2 models, got 1"):
        lb.pairwise_leaderboard(["only"], [0], [0], [0], n_boot=0)
    with pytest.raises(ValueError, match=r"^votes: "):
        lb.pairwise_leaderboard(["a", "b"], [0], [0], [2], n_boot=0)


# ---------------------------------------------------------------------------------
# Database: selector, page, API, command

MODELS = ("alpha", "beta", "gamma")
# (model of response 1, model of response 2) -> human labels on that pair
HUMAN = {
    ("alpha", "beta"): ["1", "1", "tie"],
    ("beta", "gamma"): ["1", "2"],
    ("alpha", "gamma"): ["1", "1", "2"],
}
# judge verdicts (ab, ba), already mapped back to the original numbering
JUDGE = {
    ("alpha", "beta"): ("1", "1"),
    ("beta", "gamma"): ("1", ""),
    ("alpha", "gamma"): ("1", "tie"),
}


def make_votes(name="lb-set", instructions=1, human=HUMAN, judge=JUDGE):
    dataset, responses = make_dataset(name, instructions, MODELS)
    pairs = []
    for i in range(instructions):
        for (a, b), labels in human.items():
            pair = PreferencePair.objects.create(
                dataset=dataset,
                instruction=responses[(i, a)].instruction,
                response_1=responses[(i, a)],
                response_2=responses[(i, b)],
            )
            pairs.append((pair, (a, b)))
            HumanPreference.objects.bulk_create(
                HumanPreference(pair=pair, label=v, origin="imported", voter=f"v{k}")
                for k, v in enumerate(labels)
            )
    run = JudgeRun.objects.create(
        dataset=dataset,
        name="judge",
        kind=JudgeRun.Kind.IMPORTED,
        status=JudgeRun.Status.COMPLETED,
    )
    PairwiseVerdict.objects.bulk_create(
        PairwiseVerdict(run=run, pair=pair, order=order, verdict=v)
        for pair, key in pairs
        for order, v in zip(("ab", "ba"), judge[key], strict=True)
    )
    return dataset, run


@pytest.mark.django_db
def test_selector_human_and_judge_leaderboards_and_their_rank_correlation():
    dataset, run = make_votes()
    result = board_for(dataset=dataset, n_boot=50, compare=run.pk)
    assert result["source"]["kind"] == "humans" and result["votes"] == 8
    by_name = {m["name"]: m for m in result["models"]}
    assert by_name["alpha"]["wins"] == 4 and by_name["alpha"]["ties"] == 1
    assert by_name["alpha"]["losses"] == 1 and result["models"][0]["name"] == "alpha"
    assert result["win_rate"][0][0] is None
    mean = np.mean([m["rating"]["value"] for m in result["models"]])
    assert mean == pytest.approx(1000.0)
    # the judge: AB and BA are two votes each, the unusable "" verdict left out
    judge = board_for(dataset=dataset, source=str(run.pk), n_boot=0)
    assert judge["votes"] == 5 and judge["unusable"] == 1
    assert judge["source"] == {"kind": "run", "id": run.pk, "label": f"#{run.pk} judge"}
    comp = result["comparison"]
    assert comp["models"] == ["alpha", "beta", "gamma"]
    assert comp["spearman"]["value"] is not None and comp["spearman"]["n"] == 3


@pytest.mark.django_db
def test_selector_refuses_one_model_no_votes_and_a_bad_source():
    dataset, run = make_votes(
        "lb-one", human={("alpha", "beta"): []}, judge={("alpha", "beta"): ("", "")}
    )
    with pytest.raises(LeaderboardError, match=r"^source: humans has no pairwise"):
        board_for(dataset=dataset, n_boot=0)
    with pytest.raises(LeaderboardError, match=r"^source: "):
        board_for(dataset=dataset, source="nobody", n_boot=0)
    with pytest.raises(LeaderboardError, match=r"^source: run 999999"):
        board_for(dataset=dataset, source=999999, n_boot=0)
    for bad in ("²", "1" * 4301, "-3"):  # int() raised ValueError on the first two
        with pytest.raises(LeaderboardError, match=r"^source: must be"):
            board_for(dataset=dataset, source=bad, n_boot=0)
    with pytest.raises(LeaderboardError, match=r"^n_boot: "):
        board_for(dataset=dataset, n_boot=-1)
    # every vote on one pair of responses of one model: a single model
    solo, responses = make_dataset("lb-solo", 2, ("alpha",))
    pair = PreferencePair.objects.create(
        dataset=solo,
        instruction=responses[(0, "alpha")].instruction,
        response_1=responses[(0, "alpha")],
        response_2=responses[(1, "alpha")],
    )
    HumanPreference.objects.create(pair=pair, label="1", origin="imported")
    with pytest.raises(LeaderboardError, match=r"^models: .*got 1 \('alpha'\)"):
        board_for(dataset=solo, n_boot=0)


@pytest.mark.django_db
def test_query_count_does_not_grow_with_the_votes():
    small, run_s = make_votes("lb-small", instructions=1)
    large, run_l = make_votes("lb-large", instructions=6)
    counts = []
    for dataset, run in ((small, run_s), (large, run_l)):
        with CaptureQueriesContext(connection) as ctx:
            board_for(dataset=dataset, n_boot=10, compare=run.pk, length_control=True)
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1] <= 8


@pytest.mark.django_db
def test_page_shows_the_leaderboard_heat_map_and_the_comparison(researcher, client_for):
    dataset, run = make_votes()
    url = reverse("analysis:leaderboard-pairwise", args=[dataset.pk])
    client = client_for(researcher)
    page = client.get(url, {"n_boot": 30, "length_control": "1"})
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="leaderboard-table"' in html and 'data-model="alpha"' in html
    assert "Win rate, row against column" in html and "<svg" in html
    assert 'id="leaderboard-comparison"' in html and "Spearman" in html
    assert 'id="leaderboard-length"' in html
    judge = client.get(url, {"source": run.pk, "n_boot": 0}, HTTP_HX_REQUEST="true")
    assert judge.status_code == 200 and "both orders" in judge.content.decode()
    bad = client.get(url, {"source": "nobody"})
    assert bad.status_code == 400 and "source:" in bad.content.decode()


@pytest.mark.django_db
def test_page_without_votes_is_an_empty_state_saying_how_to_get_votes(
    researcher, client_for
):
    # issue 37, defect 2: a dataset with no votes answered 400 with a raw message
    dataset, _ = make_dataset("lb-none", 1, MODELS)
    url = reverse("analysis:leaderboard-pairwise", args=[dataset.pk])
    page = client_for(researcher).get(url)
    html = page.content.decode()
    assert page.status_code == 200 and 'id="leaderboard-empty"' in html
    assert "Create a pairwise campaign" in html and "upload a preference set" in html
    assert "pairwise judge run" in html and 'id="leaderboard-error"' not in html
    assert "has no pairwise votes" not in html


@pytest.mark.django_db
def test_page_without_human_votes_opens_on_the_newest_pairwise_run(
    researcher, client_for
):
    dataset, run = make_votes("lb-judge-only", human={k: [] for k in HUMAN})
    url = reverse("analysis:leaderboard-pairwise", args=[dataset.pk])
    page = client_for(researcher).get(url, {"n_boot": 0})
    html = page.content.decode()
    assert page.status_code == 200 and 'id="leaderboard-table"' in html
    assert f'value="{run.pk}" selected' in html
    # asking for the humans explicitly: the empty state, pointing at the run
    humans = client_for(researcher).get(url, {"source": "humans", "n_boot": 0})
    assert (
        humans.status_code == 200
        and 'id="leaderboard-empty"' in humans.content.decode()
    )


@pytest.mark.django_db
def test_page_refuses_a_rater_and_sends_anonymous_to_log_in(rater, client_for):
    dataset, _ = make_votes()
    url = reverse("analysis:leaderboard-pairwise", args=[dataset.pk])
    assert client_for(rater).get(url).status_code == 403
    anonymous = client_for(None).get(url)
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]


@pytest.mark.django_db
def test_api_answers_researchers_and_refuses_raters_anonymous_and_bad_input(
    researcher, rater, api_client_for
):
    dataset, run = make_votes()
    url = reverse("analysis_api:leaderboard-pairwise", args=[dataset.pk])
    ok = api_client_for(researcher).get(url, {"source": run.pk, "n_boot": 20})
    assert ok.status_code == 200 and ok.json()["votes"] == 5
    assert api_client_for(rater).get(url).status_code == 403
    assert api_client_for(None).get(url).status_code == 401
    bad = api_client_for(researcher).get(url, {"source": "x"})
    assert bad.status_code == 400
    assert bad.json()["problems"][0]["field"] == "source"


@pytest.mark.django_db
def test_command_prints_the_table_and_the_json():
    dataset, run = make_votes("lb-cmd")
    out = io.StringIO()
    call_command(
        "leaderboard", "--dataset", "lb-cmd", "--pairwise", "--boot", "20", stdout=out
    )
    text = out.getvalue()
    assert "Pairwise leaderboard of lb-cmd" in text and "alpha" in text
    out = io.StringIO()
    call_command(
        "leaderboard", "--dataset", "lb-cmd", "--pairwise", "--source", str(run.pk),
        "--format", "json", "--boot", "0", stdout=out,
    )  # fmt: skip
    assert json.loads(out.getvalue())["unusable"] == 1
