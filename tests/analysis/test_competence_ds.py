"""Dawid-Skene in numpy (analysis.stats.competence.ds_fit) against crowd-kit 1.4.2's
DawidSkene on the same DataFrame: random campaigns (a few hundred tasks, 5-30
workers, 2-10 labels, tasks with one to six labels so that many votes tie, one
adversarial worker, a label almost nobody gives, labels in crowd-kit's order) give
the same latent labels, the
same competences, probas, priors, errors and loss history within 1e-9, and the
same number of iterations, whether the tolerance stops the fit or n_iter does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.stats import competence as rm

pytestmark = pytest.mark.filterwarnings("ignore:::crowdkit")


def label_frame(tasks, workers, labels) -> pd.DataFrame:
    """crowd-kit's DataFrame (columns task, worker, label) of the rows every model
    here is fitted on (`rm.label_rows`)."""
    rows = rm.label_rows(tasks, workers, labels)
    return pd.DataFrame(dict(zip(("task", "worker", "label"), rows, strict=True)))


def random_arrays(seed: int):
    rng = np.random.default_rng(seed)
    n_tasks = int(rng.integers(200, 500))
    n_workers = int(rng.integers(5, 31))
    n_classes = int(rng.integers(2, 11))
    truth = rng.integers(0, n_classes, n_tasks)
    accuracy = rng.uniform(0.3, 0.95, n_workers)
    tasks, workers, labels = [], [], []
    for t in range(n_tasks):
        some = rng.choice(n_workers, int(rng.integers(1, min(n_workers, 6) + 1)),
                          replace=False)  # fmt: skip
        for w in some:
            if w == 0:  # adversarial: always the next label
                label = (truth[t] + 1) % n_classes
            elif rng.random() < accuracy[w]:
                label = truth[t]
            else:
                label = rng.integers(0, n_classes)
            tasks.append(1000 + 3 * t)  # ids, not codes
            workers.append(50 + 7 * w)
            labels.append(int(label))
    labels[int(rng.integers(len(labels)))] = n_classes + 3  # a rare label
    return np.array(tasks), np.array(workers), np.array(labels)


def crowdkit_and_numpy(tasks, workers, labels, tol):
    from crowdkit.aggregation import DawidSkene

    frame = label_frame(tasks, workers, labels)
    model = DawidSkene(n_iter=rm.DS_ITER, tol=tol).fit(frame)
    u_tasks, u_workers = np.unique(tasks), np.unique(workers)
    l_idx, u_labels = pd.factorize(frame["label"])  # first appearance, as crowd-kit
    fit = rm.ds_fit(np.searchsorted(u_tasks, frame["task"].to_numpy()),
                    np.searchsorted(u_workers, frame["worker"].to_numpy()),
                    l_idx, len(u_tasks), len(u_workers), len(u_labels))  # fmt: skip
    return model, fit, u_tasks, u_workers, u_labels


@pytest.mark.parametrize("tol", [rm.DS_TOL, -np.inf])  # -inf: all DS_ITER iterations
@pytest.mark.parametrize("seed", range(6))
def test_numpy_dawid_skene_is_crowdkits(seed, tol, monkeypatch):
    monkeypatch.setattr(rm, "DS_TOL", tol)
    tasks, workers, labels = random_arrays(seed)
    model, fit, u_tasks, u_workers, u_labels = crowdkit_and_numpy(tasks, workers,
                                                                  labels, tol)  # fmt: skip
    # crowd-kit's label order: first appearance in the frame (not sorted)
    assert list(model.priors_.index) == list(u_labels)
    assert list(model.probas_.columns) == list(u_labels)
    assert len(fit.loss_history) == len(model.loss_history_)
    if tol == -np.inf:
        assert len(fit.loss_history) == rm.DS_ITER
    np.testing.assert_allclose(fit.loss_history, model.loss_history_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fit.priors, model.priors_.to_numpy(), rtol=0, atol=1e-9)
    probas = model.probas_.reindex(index=u_tasks, columns=u_labels).to_numpy()
    np.testing.assert_allclose(fit.probas, probas, rtol=0, atol=1e-9)
    errors = np.zeros_like(fit.errors)
    w = np.searchsorted(u_workers, model.errors_.index.get_level_values(0))
    observed = u_labels.get_indexer(model.errors_.index.get_level_values(1))
    errors[w, observed] = model.errors_[list(u_labels)].to_numpy()
    np.testing.assert_allclose(fit.errors, errors, rtol=0, atol=1e-9)

    # and through the public entry point: latent labels, competences, iterations
    ours = rm.fit_rater_model(tasks, workers, labels, method="dawid_skene")
    assert list(ours.latent) == list(model.labels_.reindex(u_tasks))
    assert ours.latent.dtype == labels.dtype
    theirs = rm.ds_competence(model.errors_, model.priors_, u_workers)
    np.testing.assert_allclose(ours.competence, np.clip(theirs, 0, 1), rtol=0,
                               atol=1e-9)  # fmt: skip
    assert ours.iterations == len(model.loss_history_)
    assert ours.competence[0] == ours.competence.min()  # the adversarial worker


def test_a_tie_goes_to_the_label_seen_first_as_in_crowdkit():
    from crowdkit.aggregation import DawidSkene

    # two symmetric workers disagreeing on every task: every posterior is a tie, and
    # crowd-kit gives the label seen first in the frame (4), not the lowest (2)
    tasks = np.repeat(np.arange(10), 2)
    workers = np.tile([1, 2], 10)
    labels = np.tile([4, 2], 10)
    labels[10:] = labels[10:][::-1]
    ours = rm.fit_rater_model(tasks, workers, labels, method="dawid_skene")
    model = DawidSkene(n_iter=rm.DS_ITER, tol=rm.DS_TOL).fit(
        label_frame(tasks, workers, labels)
    )
    assert list(ours.latent) == list(model.labels_.reindex(np.arange(10))) == [4] * 10
    assert ours.iterations == len(model.loss_history_)
    theirs = rm.ds_competence(model.errors_, model.priors_, np.array([1, 2]))
    np.testing.assert_allclose(ours.competence, theirs, rtol=0, atol=1e-9)
