"""MACE in numpy (analysis.stats.competence.mace_fit) against crowd-kit 1.4.2's MACE.

crowd-kit reads its M-step's expected counts in sorted worker and label order into
arrays indexed by first appearance in the frame (module doc of
analysis.stats.competence), so it is compared here on the same labels with the
workers and labels renamed to their order of first appearance, where both orders
coincide: on random campaigns (a few hundred tasks, 5-30 workers, 2-10 labels, one to
six labels per task, an adversarial worker, a rare label) the random start, the
spamming and strategy parameters, the posteriors, the log-likelihood, the latent
labels and the competences agree within 1e-12, after crowd-kit's 10 iterations and
its default 50. On the names as they are, our fit does not depend on how the labels
are named; crowd-kit's does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.stats import competence as rm
from tests.analysis.test_competence_ds import label_frame, random_arrays

# crowd-kit 1.4.2 passes keywords pandas 3.1 deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:::crowdkit")
ATOL = 1e-12


def codes(tasks, workers, labels):
    """The frame every model is fitted on, and its crowd-kit codes (first
    appearance) with their names."""
    frame = label_frame(tasks, workers, labels)
    coded = [pd.factorize(frame[column]) for column in ("task", "worker", "label")]
    return frame, coded


def crowdkit_mace(frame, coded, n_iter):
    """crowd-kit's MACE on `frame` with workers and labels renamed to their codes."""
    from crowdkit.aggregation import MACE

    renamed = pd.DataFrame(
        {"task": frame["task"], "worker": coded[1][0], "label": coded[2][0]}
    )
    return MACE(n_restarts=1, n_iter=n_iter, random_state=rm.MACE_SEED).fit(renamed)


def test_the_random_start_is_crowdkits():
    from crowdkit.aggregation import MACE

    for n_w, n_k, seed in [(5, 3, 0), (17, 10, 0), (2, 2, 7)]:
        theirs = MACE(random_state=seed)
        theirs._initialize(n_w, n_k)
        spamming, thetas = rm.mace_init(n_w, n_k, seed)
        np.testing.assert_array_equal(spamming, theirs.spamming_)
        np.testing.assert_array_equal(thetas, theirs.thetas_)


@pytest.mark.parametrize("n_iter", [rm.MACE_ITER, 50])  # ours, crowd-kit's default
@pytest.mark.parametrize("seed", range(6))
def test_numpy_mace_is_crowdkits(seed, n_iter):
    tasks, workers, labels = random_arrays(seed)
    frame, coded = codes(tasks, workers, labels)
    (t_codes, task_names), (w_codes, worker_names), (l_codes, label_names) = coded
    model = crowdkit_mace(frame, coded, n_iter)
    fit = rm.mace_fit(t_codes, w_codes, l_codes, len(task_names), len(worker_names),
                      len(label_names), n_iter=n_iter)  # fmt: skip

    np.testing.assert_allclose(fit.spamming, model.spamming_, rtol=0, atol=ATOL)
    np.testing.assert_allclose(fit.thetas, model.thetas_, rtol=0, atol=ATOL)
    probas = model.probas_.reindex(index=task_names, columns=range(len(label_names)))
    np.testing.assert_allclose(fit.probas, probas.to_numpy(), rtol=0, atol=ATOL)
    _, gold, _, _ = model._e_step(frame.copy(), task_names, worker_names,
                                  label_names, t_codes, w_codes, l_codes)  # fmt: skip
    marginal = np.log(gold.sum(axis=1) + 1e-8).sum()
    assert fit.log_likelihood == pytest.approx(marginal, rel=1e-12)

    if n_iter != rm.MACE_ITER:
        return
    # and through the public entry point, by sorted task and worker ids
    ours = rm.fit_rater_model(tasks, workers, labels, method="mace")
    latent = model.labels_.reindex(pd.Index(task_names)).to_numpy()
    expected = dict(zip(task_names, np.asarray(label_names)[latent], strict=True))
    assert list(ours.latent) == [expected[t] for t in ours.tasks]
    assert ours.latent.dtype == labels.dtype
    knowing = model.spamming_[:, 1] / model.spamming_.sum(axis=1)
    by_worker = dict(zip(worker_names, knowing, strict=True))
    np.testing.assert_allclose(ours.competence, [by_worker[w] for w in ours.workers],
                               rtol=0, atol=ATOL)  # fmt: skip
    assert ours.iterations == rm.MACE_ITER
    assert ours.competence[0] == ours.competence.min()  # the adversarial worker


def test_the_names_of_the_labels_do_not_change_the_fit():
    from crowdkit.aggregation import MACE

    tasks, workers, labels = random_arrays(2)
    renamed = 100 - labels  # the same labels, their sorted order reversed
    ours = rm.fit_rater_model(tasks, workers, labels, method="mace")
    again = rm.fit_rater_model(tasks, workers, renamed, method="mace")
    np.testing.assert_allclose(again.competence, ours.competence, rtol=0, atol=ATOL)
    assert list(again.latent) == list(100 - ours.latent)
    # crowd-kit on the same two frames: its workers take others' spamming strategies
    # whenever sorted and first-appearance orders differ (the reason for `codes`)
    fits = [
        MACE(n_restarts=1, n_iter=rm.MACE_ITER, random_state=rm.MACE_SEED).fit(
            label_frame(tasks, workers, x)
        )
        for x in (labels, renamed)
    ]
    knowing = [f.spamming_[:, 1] / f.spamming_.sum(axis=1) for f in fits]
    assert np.abs(knowing[0] - knowing[1]).max() > 1e-3


@pytest.mark.parametrize(
    "values",
    [[3, 1, 3, 2, 1], ["b", "a", "b", "c"], [2.5, -0.0, 0.0, 2.5, -1.0], [7],
     list(np.random.default_rng(0).integers(0, 50, 1000))],
)  # fmt: skip
def test_first_appearance_codes_are_pandas_factorize(values):
    codes, names = rm.first_appearance_codes(np.array(values))
    their_codes, their_names = pd.factorize(pd.Series(values))
    np.testing.assert_array_equal(codes, their_codes)
    assert list(names) == list(their_names)
