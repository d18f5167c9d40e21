"""Agreement between human raters and judges: data gathering for :mod:`analysis.stats`.

Reads only. Every public function pulls what it needs with a fixed number of queries
(whatever the dataset size) into numpy arrays and hands them to the pure statistics
package; the result is an :class:`AgreementResult` of typed objects, whose
``to_dict()`` is the JSON of the API and ``agreement --format json`` (shape: see
:func:`agreement_compute`).

Conventions (the contract the dashboard, the API and ``manage.py agreement`` share):

* An *item* is a (response, skill) pair. Skills are matched by their key, so a
  campaign on one rubric version and a judge run on another compare skill by skill.
* Human side: the numeric scores of *submitted* assignments of the chosen campaigns;
  N/A is counted, never averaged.
* Judge side: one score per item and run. With several samples per item the run's
  score is the median of its numeric samples, rounded half up; an item whose samples
  are all N/A counts as judge N/A.
* References: humans (default); another judge run (``reference_run_id``: judge vs
  judge, the reference run plays the humans' part, one "rater"); or test-retest
  (``retest``: each run's sample 0 is the judge and its sample 1 the reference).
* Defaults (one rule, :func:`agreement_defaults`, used by every caller): no campaign
  means every pointwise campaign; no run means, per judge, its latest finished run
  with scores.
* Results are cached; the cache key contains a fingerprint of the inputs (counts and
  latest change times of the scores and of the dataset's metadata decisions), so a
  new or amended score gives a new key: stale numbers are never served.

Modules: ``sources`` (campaigns and runs, parameter checks), ``inputs`` (scores into
arrays), ``cache`` (fingerprint and key), ``rows`` (the table's rows and cells), ``result``
(the typed result and its JSON form), ``profiles`` (the model means), ``compute``
(:func:`agreement_compute`), ``disagreements`` (the drill-down), ``slices`` (the
slice values).
"""

from analysis.selectors.agreement.compute import HUMAN_REFERENCES, agreement_compute
from analysis.selectors.agreement.disagreements import agreement_disagreements
from analysis.selectors.agreement.expected import JUDGE_SCORES
from analysis.selectors.agreement.result import AgreementResult
from analysis.selectors.agreement.rows import result_dict
from analysis.selectors.agreement.slices import agreement_slice_values
from analysis.selectors.agreement.sources import (
    DEFAULTS_RULE,
    MAX_BOOT,
    AgreementDefaults,
    AgreementError,
    agreement_defaults,
    agreement_sources_for_user,
    run_label,
)

__all__ = [
    "DEFAULTS_RULE",
    "HUMAN_REFERENCES",
    "JUDGE_SCORES",
    "MAX_BOOT",
    "AgreementDefaults",
    "AgreementError",
    "AgreementResult",
    "agreement_compute",
    "agreement_defaults",
    "agreement_disagreements",
    "agreement_slice_values",
    "agreement_sources_for_user",
    "result_dict",
    "run_label",
]
