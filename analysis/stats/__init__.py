"""Agreement and meta-evaluation statistics: pure numpy, no Django.

Checked against scipy, krippendorff and sklearn (tests/analysis/test_stats.py,
test_metaeval.py). Conventions (N/A is not a score; undefined statistics are
``Result(value=None, reason="not enough data: ...")``, never NaN; percentile 95% CIs
over seeded bootstrap resamples of items) are stated in :mod:`analysis.stats.results`.

Modules, by concept:

* ``results``: :class:`Result`, :func:`make_result`, ratios per resample.
* ``scale``: the 1..5 score scale, the human median rounded half up.
* ``bootstrap``: resamples as weights over collapsed cells, exact multinomial draws.
* ``lattice``: resampled sums of values on a lattice, drawn from their exact law.
* ``correlations``: weighted midranks, Pearson, Spearman, Kendall tau-b.
* ``kappa``: Cohen's kappa, unweighted and quadratic, from confusion tables.
* ``alpha``: Krippendorff's alpha from coincidence matrices.
* ``agreement``: agreement among raters and of a judge with the humans.
* ``ranks``: rank agreement of the evaluated models.
* ``report``: the agreement table per skill, ability and overall.
* ``pairwise``: labels and the input of a pairwise judge run.
* ``metaeval``: pairwise meta-evaluation against human votes.
* ``probes``: bias probes (order, length, self-preference, cues, halo, ...).

The public names of these modules are re-exported here.
"""

from analysis.stats.agreement import judge_vs_human, pairwise_agreement
from analysis.stats.alpha import (
    LEVELS,
    alpha_from_coincidence,
    alpha_from_counts,
    item_coincidences,
    krippendorff_alpha,
    ratings_to_counts,
)
from analysis.stats.bootstrap import (
    aggregate_weights,
    bootstrap_indices,
    bootstrap_weights,
    indices_to_weights,
    multinomial_cell_weights,
)
from analysis.stats.correlations import (
    correlations_table,
    correlations_w,
    kendall_tau_b,
    kendall_tau_b_table,
    midranks_w,
    pearson,
    pearson_w,
    spearman,
    spearman_sorted_w,
    spearman_w,
)
from analysis.stats.kappa import (
    confusion_matrix,
    kappa_from_table,
    quadratic_kappa,
    qwk_table,
)
from analysis.stats.metaeval import cohen_kappa, metaeval_report
from analysis.stats.pairwise import PairwiseData, encode_labels
from analysis.stats.probes import (
    Probe,
    cue_probe,
    halo_probe,
    length_probe,
    order_probe,
    pointwise_length_probe,
    score_inflation_probe,
    self_preference_probe,
)
from analysis.stats.ranks import model_rank_agreement, rank_correlations_rows
from analysis.stats.report import (
    GroupItems,
    Report,
    agreement_report,
    agreement_table,
    group_cells,
    project,
)
from analysis.stats.results import NOT_ENOUGH, Result, make_result
from analysis.stats.scale import VALUES, median_from_counts, round_half_up

__all__ = [
    "LEVELS",
    "NOT_ENOUGH",
    "VALUES",
    "GroupItems",
    "PairwiseData",
    "Probe",
    "Report",
    "Result",
    "aggregate_weights",
    "agreement_report",
    "agreement_table",
    "alpha_from_coincidence",
    "alpha_from_counts",
    "bootstrap_indices",
    "bootstrap_weights",
    "cohen_kappa",
    "confusion_matrix",
    "correlations_table",
    "correlations_w",
    "cue_probe",
    "encode_labels",
    "group_cells",
    "halo_probe",
    "indices_to_weights",
    "item_coincidences",
    "judge_vs_human",
    "kappa_from_table",
    "kendall_tau_b",
    "kendall_tau_b_table",
    "krippendorff_alpha",
    "length_probe",
    "make_result",
    "median_from_counts",
    "metaeval_report",
    "midranks_w",
    "model_rank_agreement",
    "multinomial_cell_weights",
    "order_probe",
    "pairwise_agreement",
    "pearson",
    "pearson_w",
    "pointwise_length_probe",
    "project",
    "qwk_table",
    "quadratic_kappa",
    "rank_correlations_rows",
    "ratings_to_counts",
    "round_half_up",
    "score_inflation_probe",
    "self_preference_probe",
    "spearman",
    "spearman_sorted_w",
    "spearman_w",
]
