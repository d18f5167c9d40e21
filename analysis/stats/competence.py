"""Rater models: the latent label of each task and a competence per worker.

Pure functions over three parallel arrays, one row per label a worker gave a task:
``tasks`` (task ids), ``workers`` (worker ids) and ``labels`` (the labels). Ids may be
any sortable values (the selectors pass response ids, rater ids and ``-run_id`` for a
judge run); labels are categories: an ordinal 1-5 scale is fitted as five unordered
categories (none of these models knows an order; that is what "usable on ordinal
labels as categories" means here).

Models, all fitted with fixed iterations, tolerances and seeds, so one input always
gives one result:

================  ==============================================  =====================
method            fit                                             competence in [0, 1]
================  ==============================================  =====================
``dawid_skene``   crowd-kit's DawidSkene, computed here with      the worker's chance of
                  numpy (:func:`ds_fit`): a confusion matrix per  giving the true label:
                  worker; EM from the majority vote               sum over true classes
                                                                  c of prior[c] *
                                                                  errors[w][c, c]
``mace``          crowd-kit's MACE, computed here with numpy      1 - the worker's
                  (:func:`mace_fit`): each worker knows the       spamming probability
                  label or spams; variational Bayes               (lucky right guesses
                                                                  of a spammer are not
                                                                  counted; see
                                                                  :func:`mace_competence`)
``glad``          crowd-kit's GLAD, computed here with numpy      sigmoid(alpha_w *
                  (:func:`_glad`): an ability alpha per worker,   exp(median beta)): the
                  a log inverse difficulty beta per task          worker's chance of the
                                                                  true label on a task of
                                                                  median difficulty
================  ==============================================  =====================

Why GLAD is computed here: crowd-kit's GLAD melts the labels into a (labels x classes)
frame and runs pandas joins in every gradient evaluation of its conjugate-gradient
M-step: about 5 s per EM iteration on 60,000 labels (bench/rater_quality.py), where
this one takes milliseconds. It is the same algorithm step for step (initial values,
uniform class priors, E-step, the objective and its gradient with their unit-normal
priors on alpha and beta, scipy's CG with the same tolerance and iteration cap, the
same stopping rule, labels from the last E-step); tests/analysis/test_competence.py
checks it against crowd-kit's GLAD on the same DataFrame. Dawid-Skene likewise: its
pandas joins took about 0.6 s per criterion on 50,000 labels; :func:`ds_fit` is the
same algorithm (soft majority-vote start, M-step sums clipped at 1e-10 and normalised
over the labels the worker gave, E-step in base 2, priors clipped at 1e-10, the
evidence lower bound per label as loss, stopping when it gains less than `DS_TOL`),
checked against crowd-kit in tests/analysis/test_competence_ds.py. MACE is computed
here so that the product needs no crowd-kit (which brings transformers and nltk) at run
time: :func:`mace_fit` is crowd-kit 1.4.2's variational MACE (its random start drawn
with the same seed, its priors, E-step and M-step, its number of iterations, labels
from the last E-step), about 50 times faster, with one correction: crowd-kit reads
its M-step's expected counts in sorted worker and label order into arrays it
indexes by first appearance, so whenever the two orders differ its workers swap
spammer strategies and its result depends on the names of the workers and labels
(competences up to 0.05 and a few latent labels apart on 300-500 random tasks).
Each worker keeps its own counts here; tests/analysis/test_competence_mace.py checks
the fit against crowd-kit to 1e-12 on frames where the orders coincide.

Conventions:

* the latent label of a task is its most probable label; a tie goes to the label
  crowd-kit puts first (GLAD: the lowest label; DS with pandas 3, MACE: the label
  seen first in the frame, sorted by task then worker);
* iterations and tolerances (`DS_ITER` ...) were tuned on bench/rater_quality.py
  (100 raters, 50,000 ratings, 12 criteria and a judge run) to fit every criterion of
  a campaign in a few seconds: against fits run to convergence on one criterion of
  that data, DS's competences (20 iterations instead of up to 100) are within 0.012,
  MACE's (10 instead of 50) within 0.018 and GLAD's (10 EM iterations of up to 25 CG
  steps) within 0.05, with rank correlations of 0.999 and more;
* GLAD runs its `GLAD_ITER` iterations: crowd-kit's stopping rule compares the
  objective under two different posteriors (not monotone: on the bench it stopped
  after 2 iterations, 0.14 away from convergence), so its tolerance is set to -inf;
* MACE's restarts all start from the same random state in crowd-kit 1.4.2, so one
  restart gives what ten give: :func:`mace_fit` runs one;
* BLAS runs single-threaded during a fit (`analysis.stats.blas`): scipy's CG makes thousands
  of small dot products, which OpenBLAS's threads made 3 times slower on a busy
  2-CPU machine.

Degenerate input: no labels gives an empty fit; one distinct label gives that label
for every task and competence 1.0 for every worker (every model agrees, and nothing
tells the workers apart: `RaterFit.note` says so); fewer than two workers, arrays of
different lengths, a NaN label, a worker labelling one task twice or an unknown method
raise ValueError naming the parameter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.stats.blas import one_blas_thread

METHODS = {
    "dawid_skene": "Dawid-Skene",
    "mace": "MACE",
    "glad": "GLAD",
}
COMPETENCE_RULES = {
    "dawid_skene": "the rater's probability of giving the true label: over the true "
    "scores, their prior times the diagonal of the rater's confusion matrix",
    "mace": "1 minus the rater's probability of spamming (answering without knowing)",
    "glad": "sigmoid(alpha × exp(median beta)): the rater's probability of giving "
    "the true label on a response of median difficulty",
}
DS_ITER, DS_TOL = 20, 1e-4
MACE_ITER, MACE_SEED = 10, 0
# crowd-kit's defaults: the start's noise, the Beta prior on knowing, the Dirichlet
# prior on a spammer's labels
MACE_NOISE, MACE_ALPHA, MACE_BETA, MACE_STRATEGY_PRIOR = 0.5, 0.5, 0.5, 10.0
GLAD_ITER, GLAD_TOL = 10, -np.inf  # a fixed number of iterations (module doc)
GLAD_M_ITER, GLAD_M_TOL = 25, 1e-2  # crowd-kit's defaults


@dataclass(frozen=True)
class RaterFit:
    """A fitted model: arrays by sorted distinct task id and sorted worker id."""

    method: str
    tasks: np.ndarray  # sorted distinct task ids
    latent: np.ndarray  # the most probable label of each task
    workers: np.ndarray  # sorted distinct worker ids
    competence: np.ndarray  # per worker, in [0, 1] (module doc)
    n_labels: np.ndarray  # labels each worker gave
    iterations: int = 0  # EM iterations run
    note: str = ""  # set for a degenerate input


def check_method(method: str) -> str:
    """`method` when it is one of METHODS; ValueError naming `method` otherwise."""
    if method not in METHODS:
        raise ValueError(
            f"method: {str(method)[:40]!r} is not a rater model; use one of "
            f"{', '.join(METHODS)}"
        )
    return method


def _checked(tasks, workers, labels):
    tasks, workers, labels = (np.asarray(x).ravel() for x in (tasks, workers, labels))
    if len(workers) != len(tasks):
        raise ValueError(f"workers: {len(workers)} worker ids for {len(tasks)} tasks")
    if len(labels) != len(tasks):
        raise ValueError(f"labels: {len(labels)} labels for {len(tasks)} tasks")
    if labels.dtype.kind == "f" and np.isnan(labels).any():
        raise ValueError("labels: a label is NaN; leave N/A out before fitting")
    return tasks, workers, labels


def label_rows(tasks, workers, labels):
    """(tasks, workers, labels) sorted by task then worker: the one input every model
    here is fitted on (crowd-kit's DataFrame of these three columns, row for row)."""
    tasks, workers, labels = _checked(tasks, workers, labels)
    order = np.lexsort((workers, tasks))
    return tasks[order], workers[order], labels[order]


def first_appearance_codes(values) -> tuple[np.ndarray, np.ndarray]:
    """(codes, names): each value's code and the distinct values numbered in the order
    they first appear (pandas' `factorize`, which crowd-kit's codes follow)."""
    values = np.asarray(values).ravel()
    names, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    return rank[inverse.ravel()], names[order]


def fit_rater_model(tasks, workers, labels, *, method: str) -> RaterFit:
    """The latent labels and the workers' competences under `method` (module doc).

    Pure; the same arrays always give the same result. Raises ValueError naming the
    parameter for bad input (module doc)."""
    check_method(method)
    tasks, workers, labels = _checked(tasks, workers, labels)
    u_tasks, t_idx = np.unique(tasks, return_inverse=True)
    u_workers, w_idx = np.unique(workers, return_inverse=True)
    t_idx, w_idx = t_idx.ravel(), w_idx.ravel()
    if len(tasks) and len(np.unique(t_idx * len(u_workers) + w_idx)) < len(tasks):
        raise ValueError(
            "tasks: a worker labelled one task twice; give one label per (task, worker)"
        )
    n_labels = np.bincount(w_idx, minlength=len(u_workers))
    if not len(tasks):
        return RaterFit(method, u_tasks, labels[:0], u_workers, np.zeros(0),
                        n_labels, note="no labels")  # fmt: skip
    if len(u_workers) < 2:
        raise ValueError(
            f"workers: a rater model needs labels from at least two workers, not "
            f"{len(u_workers)}"
        )
    values = np.unique(labels)
    if len(values) == 1:
        return RaterFit(
            method, u_tasks, np.full(len(u_tasks), values[0]), u_workers,
            np.ones(len(u_workers)), n_labels,
            note="every label is the same: nothing tells the workers apart",
        )  # fmt: skip
    rows = label_rows(tasks, workers, labels)
    fit = {"dawid_skene": _dawid_skene, "mace": _mace, "glad": _glad}[method]
    with one_blas_thread():
        latent, competence, iterations = fit(rows, u_tasks, u_workers)
    return RaterFit(method, u_tasks, latent, u_workers,
                    np.clip(competence, 0.0, 1.0), n_labels, iterations)  # fmt: skip


def ds_competence(errors, priors, workers: np.ndarray) -> np.ndarray:
    """Per worker (sorted ids), sum over classes c of priors[c] * errors[(w, c), c]:
    crowd-kit's `errors_` holds a row per (worker, observed label) the worker gave,
    a column per true label; a label the worker never gave adds nothing."""
    idx = errors.index
    w = np.searchsorted(workers, idx.get_level_values(0).to_numpy())
    observed = idx.get_level_values(1).to_numpy()
    columns = list(errors.columns)
    out = np.zeros(len(workers))
    values = errors.to_numpy()
    for c, label in enumerate(columns):
        rows = np.flatnonzero(observed == label)
        np.add.at(out, w[rows], float(priors[label]) * values[rows, c])
    return out


_DS_EPS = np.float_power(10, -10)  # crowd-kit's clip of errors, priors and probas


@dataclass
class DsFit:
    """Dawid-Skene's parameters (crowd-kit's `probas_`, `priors_`, `errors_`), by
    task code, worker code and label code (the caller's)."""

    probas: np.ndarray  # (tasks, labels), clipped below at 1e-10 as crowd-kit's
    priors: np.ndarray  # (labels,), the mean of the last E-step's probas
    errors: np.ndarray  # (workers, observed, true); 0 for a label a worker never gave
    loss_history: list[float]


def ds_fit(t_idx, w_idx, l_idx, n_t: int, n_w: int, n_k: int) -> DsFit:
    """crowd-kit's `DawidSkene(n_iter=DS_ITER, tol=DS_TOL).fit(frame)` in numpy, on
    the codes of each row's task, worker and label (module doc)."""
    from scipy import sparse

    cell = w_idx * n_k + l_idx  # the row of errors_ a label falls in
    given = (np.bincount(cell, minlength=n_w * n_k) > 0).reshape(n_w, n_k, 1)
    # the sums over rows below, as products with the (task, cell) incidence matrix
    by_task = sparse.csr_array((np.ones(len(cell)), (t_idx, cell)), (n_t, n_w * n_k))
    by_cell = by_task.T.tocsr()

    def m_step(probas):
        # errors_[(w, l), c] = the sum of probas[t, c] over the tasks where w said l,
        # clipped at 1e-10 on the rows w gave, normalised over them per (w, c).
        sums = (by_cell @ probas).reshape(n_w, n_k, n_k)
        errors = np.where(given, np.maximum(sums, _DS_EPS), 0)
        return errors / errors.sum(axis=1, keepdims=True), sums

    def log_errors(errors, log):
        return log(np.where(given, errors, 1.0)).reshape(n_w * n_k, n_k)

    def e_step(priors, errors):
        # in base 2 as crowd-kit, shifted by each row's maximum before exp2
        log_lik = by_task @ log_errors(errors, np.log2)
        log_lik = np.log2(np.maximum(priors, _DS_EPS)) + log_lik
        scaled = np.exp2(log_lik - log_lik.max(axis=1, keepdims=True))
        return scaled / scaled.sum(axis=1, keepdims=True)

    def lower_bound(probas, priors, errors, sums):
        # E[log joint] over probas (natural log, priors clipped): crowd-kit's sum over
        # rows of probas[t] * (log errors[(w, l)] + log priors), taken per (w, l) with
        # the M-step's sums; + the entropy of the probas clipped at 1e-10.
        sums = sums.reshape(n_w * n_k, n_k)
        joint = float(np.sum(sums * log_errors(errors, np.log)))
        joint += float(sums.sum(axis=0) @ np.log(np.maximum(priors, _DS_EPS)))
        clipped = np.maximum(probas, _DS_EPS)
        return joint - float(np.sum(np.log(clipped) * clipped)), clipped

    # Majority vote: each task's share of votes per label (soft, so ties stay ties).
    votes = np.bincount(t_idx * n_k + l_idx, minlength=n_t * n_k).reshape(n_t, n_k)
    probas = votes / votes.sum(axis=1, keepdims=True)
    priors = probas.mean(axis=0)
    errors = m_step(probas)[0]
    loss, history = -np.inf, []
    for _ in range(DS_ITER):
        probas = e_step(priors, errors)
        priors = probas.mean(axis=0)
        errors, sums = m_step(probas)
        new_loss, probas = lower_bound(probas, priors, errors, sums)
        history.append(new_loss / len(t_idx))
        if history[-1] - loss < DS_TOL:
            break
        loss = history[-1]
    return DsFit(probas, priors, errors, history)


def _dawid_skene(rows, tasks, workers):
    row_tasks, row_workers, row_labels = rows
    # crowd-kit's label columns come in the order of first appearance in the frame
    # (pandas 3's value_counts groups with sort=False), and so do ties in its argmax
    l_idx, labels = first_appearance_codes(row_labels)
    fit = ds_fit(np.searchsorted(tasks, row_tasks),
                 np.searchsorted(workers, row_workers),
                 l_idx, len(tasks), len(workers), len(labels))  # fmt: skip
    # crowd-kit's priors_ are the unclipped mean (its clip acts on a copy)
    competence = np.einsum("c,wcc->w", fit.priors, fit.errors)
    latent = np.asarray(labels)[fit.probas.argmax(axis=1)]
    return latent, competence, len(fit.loss_history)


# --- MACE ---------------------------------------------------------------------------


@dataclass
class MaceFit:
    """MACE's parameters (crowd-kit's `spamming_`, `thetas_`, `probas_`), by the
    caller's worker, label and task codes."""

    spamming: np.ndarray  # (workers, 2): exp E[log p] of (spamming, knowing)
    thetas: np.ndarray  # (workers, labels): exp E[log p] of a spammer's labels
    probas: np.ndarray  # (tasks, labels): the posterior of the true label
    log_likelihood: float  # of the last E-step (crowd-kit's marginal likelihood)


def mace_init(n_w: int, n_k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """crowd-kit's random start: (spamming, thetas), each row drawn uniform on
    [1, 2 + MACE_NOISE] by a fresh RandomState(seed) and normalised. Both draws
    restart from the seed, so every one of crowd-kit's restarts starts here."""

    def draw(shape):
        values = np.random.RandomState(seed).uniform(size=shape) * (1 + MACE_NOISE) + 1
        return values / values.sum(axis=1, keepdims=True)

    return draw((n_w, 2)), draw((n_w, n_k))


def mace_fit(t_idx, w_idx, l_idx, n_t: int, n_w: int, n_k: int, *,
             n_iter: int = MACE_ITER, seed: int = MACE_SEED) -> MaceFit:  # fmt: skip
    """crowd-kit's `MACE(n_iter=n_iter, random_state=seed).fit(frame)` in numpy
    (variational Bayes: Beta(0.5, 0.5) on knowing, Dirichlet(10) on a spammer's
    labels; `n_iter` M- and E-steps after a first E-step, no stopping rule), on the
    codes of each row's task, worker and label; the codes of workers and labels must
    be crowd-kit's (first appearance in the frame) for the random start to fall on
    the same workers and labels.

    One difference: crowd-kit's M-step reads its expected counts in sorted worker
    and label order into arrays it indexes by first appearance, so its workers swap
    spamming strategies whenever the two orders differ (its result then depends on
    the names of the workers and labels). Here each worker keeps its own counts;
    the two agree exactly when both orders coincide (module doc)."""
    from scipy.special import digamma

    t_idx, w_idx, l_idx = (np.asarray(x).ravel() for x in (t_idx, w_idx, l_idx))
    rows = np.arange(len(t_idx))
    by_task = np.argsort(t_idx, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(t_idx[by_task]) != 0])
    if len(starts) != n_t:
        raise ValueError(f"t_idx: {len(starts)} tasks labelled of n_t={n_t}")

    def e_step(spamming, thetas):
        spam = spamming[w_idx, 0] * thetas[w_idx, l_idx]
        know = spamming[w_idx, 1]
        # a row's likelihood under each true label k: it spams into its label,
        # or knows and k is its label
        given = np.repeat(spam[:, None], n_k, axis=1)
        given[rows, l_idx] += know
        joint = np.multiply.reduceat(given[by_task], starts, axis=0) / n_k
        marginal = joint.sum(axis=1)
        log_likelihood = float(np.log(marginal + 1e-8).sum())
        # expected counts of spamming into the row's label, and of knowing
        spamming_row = spam * (joint[t_idx] / given).sum(axis=1) / marginal[t_idx]
        knowing_row = joint[t_idx, l_idx] * know / (spam + know) / marginal[t_idx]
        strategy = np.zeros((n_w, n_k))
        np.add.at(strategy, (w_idx, l_idx), spamming_row)
        knowing = np.stack([np.bincount(w_idx, spamming_row, n_w),
                            np.bincount(w_idx, knowing_row, n_w)], axis=1)  # fmt: skip
        return log_likelihood, joint, strategy, knowing

    def variational(counts, prior):
        # exp(E[log p]) under the Dirichlet posterior: sums to less than 1
        total = (counts + prior).sum(axis=1, keepdims=True)
        return np.exp(digamma(counts + prior)) / np.exp(digamma(total))

    spamming, thetas = mace_init(n_w, n_k, seed)
    log_likelihood, joint, strategy, knowing = e_step(spamming, thetas)
    for _ in range(n_iter):
        spamming = variational(knowing, np.array([MACE_ALPHA, MACE_BETA]))
        thetas = variational(strategy, MACE_STRATEGY_PRIOR)
        log_likelihood, joint, strategy, knowing = e_step(spamming, thetas)
    probas = joint / joint.sum(axis=1, keepdims=True)
    return MaceFit(spamming, thetas, probas, log_likelihood)


def mace_competence(spamming: np.ndarray) -> np.ndarray:
    """Each worker's probability of knowing from `spamming` (column 0 spams, column
    1 knows): the variational M-step stores exp(E[log p]) for each state, a pair
    that sums to less than 1, so the pair is renormalised: s1 / (s0 + s1)."""
    spamming = np.asarray(spamming, float)
    return spamming[:, 1] / spamming.sum(axis=1)


def _mace(rows, tasks, workers):
    # crowd-kit's codes: first appearance in the frame (the random start and the
    # tie rule of the latent label follow them)
    (t_codes, task_names), (w_codes, worker_names), (l_codes, label_names) = (
        first_appearance_codes(column) for column in rows
    )
    fit = mace_fit(t_codes, w_codes, l_codes, len(task_names), len(worker_names),
                   len(label_names))  # fmt: skip
    latent = np.empty(len(tasks), dtype=label_names.dtype)
    latent[np.searchsorted(tasks, task_names)] = label_names[fit.probas.argmax(axis=1)]
    competence = np.zeros(len(workers))
    competence[np.searchsorted(workers, worker_names)] = mace_competence(fit.spamming)
    return latent, competence, MACE_ITER


# --- GLAD ---------------------------------------------------------------------------


def _softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(x)), computed stably (crowd-kit's GLAD rounds it to x past 30
    and to 0 below -30: a difference below 1e-13)."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


@dataclass
class GladFit:
    """GLAD's parameters (crowd-kit's `alphas_`, `betas_`, `probas_`), in the order
    of `labels` (sorted), `workers` and `tasks` (first appearance, as crowd-kit)."""

    labels: np.ndarray
    workers: np.ndarray
    tasks: np.ndarray
    alphas: np.ndarray
    betas: np.ndarray
    probas: np.ndarray  # (tasks, labels), from the last E-step
    iterations: int


def glad_fit(tasks, workers, labels) -> GladFit:
    """crowd-kit's `GLAD(n_iter=GLAD_ITER, tol=GLAD_TOL, m_step_max_iter=GLAD_M_ITER,
    m_step_tol=GLAD_M_TOL).fit(frame)` in numpy (module doc), on the frame's three
    columns (:func:`label_rows`). The sums over classes of crowd-kit's melted frame
    are taken in closed form: with p = the posterior of a row's own label, sum_k
    posterior_k * (delta_k - sigma) = p - sigma."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    t_codes, task_names = first_appearance_codes(tasks)
    w_codes, worker_names = first_appearance_codes(workers)
    label_names, l_codes = np.unique(labels, return_inverse=True)
    l_codes = l_codes.ravel()
    n_t, n_w, n_k = len(task_names), len(worker_names), len(label_names)
    n_rows = len(t_codes) * n_k  # crowd-kit's melted frame: one row per class
    wrong = np.log(n_k - 1)
    log_prior = np.log(1.0 / n_k)
    log_norm = 0.5 * np.log(2 * np.pi)

    # log sigmoid(ab) = -softplus(-ab) and log(1 - sigmoid(ab)) = -softplus(-ab) - ab:
    # one softplus per evaluation gives the log-likelihood of a row's own label
    # and of each other label, and sigmoid(ab) itself.
    def e_step(alpha, beta):
        ab = alpha[w_codes] * np.exp(beta[t_codes])
        own = -_softplus(-ab)
        other = own - ab - wrong
        log_lik = np.repeat(np.bincount(t_codes, other, n_t)[:, None], n_k, axis=1)
        np.add.at(log_lik, (t_codes, l_codes), own - other)
        log_lik += log_prior
        return np.exp(log_lik - logsumexp(log_lik, axis=1, keepdims=True))

    def q_and_gradient(alpha, beta, p):
        """Crowd-kit's Q and its gradient (d alpha, d beta); p: each row's posterior
        of its own label."""
        e = np.exp(beta[t_codes])
        ab = alpha[w_codes] * e
        own = -_softplus(-ab)
        value = float(np.sum(own - (1 - p) * (ab + wrong)))
        value -= float(np.sum(0.5 * (alpha - 1) ** 2 + log_norm))
        value -= float(np.sum(0.5 * (beta - 1) ** 2 + log_norm))
        g = p - np.exp(own)
        d_alpha = np.bincount(w_codes, g * e, n_w) - (alpha - 1)
        d_beta = np.bincount(t_codes, g * ab, n_t) - (beta - 1)
        return (-np.inf if np.isnan(value) else value), d_alpha, d_beta

    alpha, beta = np.ones(n_w), np.ones(n_t)
    post = e_step(alpha, beta)
    value = q_and_gradient(alpha, beta, post[t_codes, l_codes])[0]
    iterations = 0
    for _ in range(GLAD_ITER):
        iterations += 1
        last = value
        post = e_step(alpha, beta)
        p = post[t_codes, l_codes]

        def minus_q(x, p=p):
            value, d_alpha, d_beta = q_and_gradient(x[:n_w], x[n_w:], p)
            return -value, -np.concatenate([d_alpha, d_beta])

        res = minimize(minus_q, np.concatenate([alpha, beta]), method="CG",
                       jac=True, tol=GLAD_M_TOL, options={"disp": False,
                                                          "maxiter": GLAD_M_ITER})  # fmt: skip
        alpha, beta = res.x[:n_w], res.x[n_w:]
        value = q_and_gradient(alpha, beta, p)[0] / n_rows
        if value - last < GLAD_TOL:
            break
    return GladFit(label_names, worker_names, task_names, alpha, beta, post,
                   iterations)  # fmt: skip


def glad_competence(fit: GladFit, workers: np.ndarray) -> np.ndarray:
    """Per worker (sorted ids): sigmoid(alpha * exp(median beta)) (module doc)."""
    from scipy.special import expit

    out = np.zeros(len(workers))
    scale = np.exp(np.median(fit.betas))
    out[np.searchsorted(workers, fit.workers)] = expit(fit.alphas * scale)
    return out


def _glad(rows, tasks, workers):
    fit = glad_fit(*rows)
    latent = np.empty(len(tasks), dtype=fit.labels.dtype)
    latent[np.searchsorted(tasks, fit.tasks)] = fit.labels[fit.probas.argmax(axis=1)]
    return latent, glad_competence(fit, workers), fit.iterations
