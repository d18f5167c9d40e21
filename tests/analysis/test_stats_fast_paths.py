"""The fast paths of the agreement statistics give what the reference computations give.

The slice switch of the dashboard (issue 13: < 400 ms cold) made these faster: the
percentile intervals of many statistics at once, the models' rank correlations from
order relations, Kendall's tau-b from a contingency table by matrix products, item
draws for many small groups (shared by sources that scored the same items), the
dataset's responses cached under its fingerprint, and one thread for small inputs.
Each is checked here against numpy / scipy on the same arrays, or against the path
it replaced.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from scipy import stats as sps

from analysis.selectors.agreement import compute as agreement_compute_module
from analysis.selectors.agreement.cache import (
    cached_responses,
    dataset_fingerprint,
    gc_paused,
    inputs_fingerprint,
)
from analysis.selectors.agreement.compute import agreement_compute
from analysis.stats.bootstrap import GroupDraws, group_sums, sum_method
from analysis.stats.correlations import kendall_tau_b_table
from analysis.stats.ranks import rank_correlations_rows
from analysis.stats.results import (
    ResultBatch,
    percentile_intervals,
    result_from_rows,
    results_from_columns,
)
from annotation.models import Instruction, Response
from tests.analysis.agreement_data import make_agreement_setup


def _messy(rng, b, g):
    """(b, g) with ties, NaN and infinite entries, and columns of every kind."""
    x = np.round(rng.normal(size=(b, g)) * 3) / 3
    x[rng.random((b, g)) < 0.2] = np.nan
    x[0, 0] = np.inf
    if g > 1:
        x[:, 1] = np.nan  # nothing finite
    if g > 2:
        x[1:, 2] = np.nan  # one finite value
    return x


def test_percentile_intervals_equal_numpy_quantile_of_each_columns_finite_values():
    rng = np.random.default_rng(3)
    for b in (1, 2, 3, 40, 1000):
        x = _messy(rng, b, 6)
        lo, hi, undefined = percentile_intervals(x)
        for g in range(x.shape[1]):
            ok = x[:, g][np.isfinite(x[:, g])]
            assert undefined[g] == b - ok.size
            if ok.size == 0:
                assert np.isnan(lo[g]) and np.isnan(hi[g])
                continue
            q = np.quantile(ok, [0.025, 0.975])
            assert (lo[g], hi[g]) == (q[0], q[1])  # every bit


def test_results_from_columns_and_the_batch_equal_one_result_at_a_time():
    rng = np.random.default_rng(5)
    rows = _messy(rng, 201, 5)
    rows[0, 3] = np.nan  # an undefined point estimate
    ns, whys = [10, 11, 12, 13, 14], ["a", "b", "c", "d", ""]
    expected = [result_from_rows(rows[:, g], ns[g], whys[g]) for g in range(5)]
    assert results_from_columns(rows, ns, whys) == expected
    assert expected[3].value is None and expected[3].reason == "not enough data: d"
    target: dict = {}
    batch = ResultBatch()
    for g in range(5):
        batch.add(target, f"s{g}", rows[:, g], ns[g], whys[g])
    batch.resolve()
    assert [target[f"s{g}"] for g in range(5)] == expected
    # No resamples: values only, as make_result gives.
    assert results_from_columns(rows[:1], ns, whys) == [
        result_from_rows(rows[:1, g], ns[g], whys[g]) for g in range(5)
    ]


def test_rank_correlations_of_each_row_match_scipy_with_ties():
    rng = np.random.default_rng(7)
    x = np.round(rng.random((300, 9)) * 6) / 2  # many ties
    y = np.round(rng.random((300, 9)) * 4) / 2
    x[5, 3] = np.nan
    y[6] = 2.0  # a constant row
    got = rank_correlations_rows(x, y)
    for b in range(300):
        if b in (5, 6):
            assert np.isnan(got["spearman"][b]) and np.isnan(got["kendall"][b])
            continue
        rho = sps.spearmanr(x[b], y[b]).statistic
        tau = sps.kendalltau(x[b], y[b], variant="b").statistic
        assert got["spearman"][b] == pytest.approx(rho, abs=1e-12)
        assert got["kendall"][b] == pytest.approx(tau, abs=1e-12)
    one = rank_correlations_rows(x[:, :1], y[:, :1])
    assert np.isnan(one["spearman"]).all() and np.isnan(one["kendall"]).all()


def test_kendall_from_a_table_matches_scipy_on_the_expanded_data():
    rng = np.random.default_rng(11)
    for vx, vy in ((5, 13), (2, 2), (1, 4), (5, 5)):
        tables = rng.integers(0, 4, size=(40, vx, vy)).astype(float)
        got = kendall_tau_b_table(tables)
        for b, t in enumerate(tables):
            xs, ys = np.nonzero(t)
            reps = t[xs, ys].astype(int)
            x, y = np.repeat(xs, reps), np.repeat(ys, reps)
            if len(set(x)) < 2 or len(set(y)) < 2:
                assert np.isnan(got[b])
                continue
            ref = sps.kendalltau(x, y, variant="b").statistic
            assert got[b] == pytest.approx(ref, abs=1e-12)


def test_item_draws_resample_within_groups_like_a_plain_bootstrap():
    rng = np.random.default_rng(2)
    n_groups, size = 60, 5
    groups = np.repeat(np.arange(n_groups), size)
    values = rng.integers(1, 6, groups.size).astype(float)
    # Many small groups: items one by one beat the chain; few big ones the other
    # way round (values on no lattice); on a lattice its exact sums beat both.
    sizes = np.full(n_groups, size)
    assert sum_method(sizes, 5, 3000) == "items"
    assert sum_method(np.full(3, 3000), 5, 3000) == "chain"
    assert sum_method(sizes, 5, 3000, (1.0, np.arange(5))) == "lattice"
    n, sums, boot = group_sums(values, groups, n_groups + 1, 3000, rng)
    assert n[-1] == 0 and (boot[:, -1] == 0).all()
    for g in range(0, n_groups, 7):
        x = values[groups == g]
        assert n[g] == size and sums[g] == x.sum()
        means = boot[:, g] / size
        # Every resample is a sum of `size` of this group's own values.
        assert np.isin(
            np.round(boot[:, g] * 2), np.arange(2 * size, 10 * size + 1)
        ).all()
        assert boot[:, g].min() >= x.min() * size and boot[:, g].max() <= x.max() * size
        if x.std() > 0:
            assert means.std() == pytest.approx(x.std() / np.sqrt(size), rel=0.12)
            ref = sps.bootstrap(
                (x,), np.mean, n_resamples=3000, method="percentile", random_state=1
            ).confidence_interval
            lo, hi = np.quantile(means, [0.025, 0.975])
            assert lo == pytest.approx(ref.low, abs=0.25)
            assert hi == pytest.approx(ref.high, abs=0.25)


def test_one_group_draw_serves_several_sources_paired():
    groups = np.array([0, 0, 1, 1, 1, 2])
    draws = GroupDraws(groups, 3, 500, np.random.default_rng(0))
    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    ones = np.ones(6)
    assert (draws.boot(ones) == [2.0, 3.0, 1.0]).all()  # each group keeps its size
    # Paired: b = a + 1 per item gives exactly a's resampled sums plus the sizes.
    assert (draws.boot(a + 1) == draws.boot(a) + [2.0, 3.0, 1.0]).all()
    assert (draws.boot(a)[:, 2] == 6.0).all()


def test_gc_paused_restores_the_collectors_state_even_on_error():
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            gc.enable() if enabled else gc.disable()
            with pytest.raises(ValueError):
                with gc_paused():
                    assert not gc.isenabled()
                    with gc_paused():  # nested: the outer block restores
                        pass
                    assert not gc.isenabled()
                    raise ValueError
            assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_small_inputs_use_one_thread(settings):
    settings.AGREEMENT_WORKERS = 3
    workers = agreement_compute_module._workers
    assert workers(agreement_compute_module.THREADS_FROM_ITEMS - 1) == 1
    assert workers(agreement_compute_module.THREADS_FROM_ITEMS) == 3


def test_threads_give_the_same_result_as_one_thread(researcher, settings, monkeypatch):
    # Above THREADS_FROM_ITEMS the statistics run in threads and the model profiles
    # in a thread of their own; every figure must equal the one-thread computation.
    s = make_agreement_setup(
        researcher, human=HUMAN, judges=[JUDGE, JUDGE], n_instructions=6,
        models=("alpha", "beta"), n_raters=2, name="threads",
    )  # fmt: skip
    kwargs = {
        "dataset": s.dataset, "campaign_ids": [s.campaign.pk],
        "run_ids": [r.pk for r in s.runs], "n_boot": 200, "use_cache": False,
    }  # fmt: skip
    one = agreement_compute(**kwargs)
    started = []
    real = agreement_compute_module.ThreadPoolExecutor

    def counted(*args, **kw):
        started.append(kw.get("max_workers", args[0] if args else None))
        return real(*args, **kw)

    monkeypatch.setattr(agreement_compute_module, "THREADS_FROM_ITEMS", 1)
    monkeypatch.setattr(agreement_compute_module, "ThreadPoolExecutor", counted)
    settings.AGREEMENT_WORKERS = 2
    threaded = agreement_compute(**kwargs)
    assert started == [1]  # the profiles' own thread was used
    assert threaded.rows == one.rows
    assert all(r.profiles.view("all") for r in threaded.rows)


HUMAN = {(i, m, "readability"): [1 + (i + k) % 5, 1 + i % 3] for i in range(6)
         for k, m in enumerate(("alpha", "beta"))}  # fmt: skip
JUDGE = {(i, m, "readability"): 1 + (i * 2 + k) % 5 for i in range(6)
         for k, m in enumerate(("alpha", "beta"))}  # fmt: skip


def test_the_responses_table_is_cached_per_dataset_state(researcher):
    s = make_agreement_setup(
        researcher, human=HUMAN, judges=[JUDGE, JUDGE], n_instructions=6,
        models=("alpha", "beta"), n_raters=2, name="resp-cache",
        difficulty=[1, 2, 3, 1, 2, 3],
    )  # fmt: skip
    kwargs = {"campaign_ids": [s.campaign.pk], "run_ids": [s.runs[0].pk], "n_boot": 50}
    with CaptureQueriesContext(connection) as first:
        whole = agreement_compute(dataset=s.dataset, **kwargs)
    with CaptureQueriesContext(connection) as second:
        sliced = agreement_compute(
            dataset=s.dataset, slice_dim="difficulty", slice_value="3", **kwargs
        )
    # The slice reads the responses table the first computation cached.
    assert len(second.captured_queries) == len(first.captured_queries) - 1
    assert whole.models == sliced.models == ("alpha", "beta")
    assert sliced.row("overall").judge(s.runs[0].pk).items == 4
    # Same numbers as without any cache.
    fresh = agreement_compute(
        dataset=s.dataset, slice_dim="difficulty", slice_value="3", use_cache=False,
        **kwargs,
    )  # fmt: skip
    assert fresh.rows == sliced.rows
    # A new response changes the dataset's part of the fingerprint: a new table.
    fp = inputs_fingerprint(s.dataset, [s.campaign.pk], [s.runs[0].pk])
    before = cached_responses(s.dataset, fp)
    Response.objects.create(
        instruction=Instruction.objects.filter(dataset=s.dataset).first(),
        model_name="gamma",
        text="new",
    )
    fp2 = inputs_fingerprint(s.dataset, [s.campaign.pk], [s.runs[0].pk])
    assert dataset_fingerprint(fp2) != dataset_fingerprint(fp)
    after = cached_responses(s.dataset, fp2)
    assert len(after.ids) == len(before.ids) + 1 and "gamma" in after.model_names
    # Other campaigns and runs share the dataset's table (the key ignores them).
    assert dataset_fingerprint(
        inputs_fingerprint(s.dataset, [], [s.runs[1].pk])
    ) == dataset_fingerprint(fp2)


def test_sources_that_scored_the_same_items_share_their_draws(researcher):
    s = make_agreement_setup(
        researcher, human=HUMAN, judges=[JUDGE, JUDGE], n_instructions=6,
        models=("alpha", "beta"), n_raters=2, name="paired",
    )  # fmt: skip
    res = agreement_compute(dataset=s.dataset, n_boot=300, use_cache=False)
    a, b = (str(r.pk) for r in s.runs)
    for row in res.rows:
        for view in ("all", "shared"):
            for e in row.profiles.view(view):
                # Two runs with identical scores on identical items: one resample.
                assert e.judges[a] == e.judges[b]
                assert e.judges[a].ci is not None


@pytest.mark.django_db
def test_integer_rows_arrive_as_the_plain_cursor_reads_them():
    from analysis.selectors.agreement.arrays import int_rows

    sql = (
        "SELECT v, -v, v * 1000000000000, COALESCE(NULLIF(v, 2), -32768) FROM "
        "(SELECT 1 AS v UNION ALL SELECT 2 UNION ALL SELECT 3) t WHERE v >= %s"
    )
    got = int_rows(sql, [1], 4)
    with connection.cursor() as cur:
        cur.execute(sql, [1])
        want = np.array(cur.fetchall(), dtype=np.int64)
    assert got.dtype == np.int64
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, want.tolist()))
    assert int_rows(sql, [9], 4).shape == (0, 4)
