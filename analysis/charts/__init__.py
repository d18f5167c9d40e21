"""Server-side SVG charts of the agreement dashboard and the meta-evaluation page:
pure functions, no Django.

Every function returns one standalone SVG document as a string, so the same text is
inlined in a page and served as a download. The contract every chart keeps:

* Every piece of text (titles, model and skill names, tooltips) goes through
  ``html.escape``: names come from uploaded files and must never become markup.
* ``role="img"`` with an ``aria-label`` (and ``<title>``/``<desc>``) for screen readers;
  each mark carries its own ``<title>`` tooltip with the exact numbers.
* Size comes from ``viewBox`` only, so a chart scales with its container.
* Colours come from the Okabe-Ito palette (safe for colour-blind readers) and every
  series differs by a second channel too: dash pattern and marker shape for lines,
  hatching for bars. Humans (the reference) are always solid and dark.
* Empty, malformed or undefined input gives a "not enough data" chart, never an
  exception: the dashboard shows whatever the data allows.
* Text stays inside the viewBox in any common font: widths are estimated generously
  per character (``svg.HEADING_CHAR``, ``svg.TEXT_CHAR_EM``), titles wrap (content
  starts ``heading_extra`` lower), radar labels lie beyond the outer ring and the
  scale numbers inside it.

The ``*_from_agreement`` adapters take the ``AgreementResult`` returned by
``analysis.selectors.agreement.agreement_compute`` (see its contract) and pick one
chart's numbers out of it; the ``*_from_metaeval`` adapters take one run of
``analysis.selectors.metaeval.metaeval_compute``'s result.
"""

from analysis.charts.agreement import (
    RADAR_VIEWS,
    heatmap_from_agreement,
    radar_from_agreement,
    rank_bars_from_agreement,
    scatter_from_agreement,
)
from analysis.charts.bars import rank_bars_chart, ranks_from_means
from analysis.charts.heatmap import heatmap_chart
from analysis.charts.intervals import (
    Effect,
    Interval,
    effects_chart,
    interval_bars_chart,
)
from analysis.charts.metaeval import (
    category_accuracy_from_metaeval,
    probe_effects_from_metaeval,
)
from analysis.charts.radar import radar_chart
from analysis.charts.scatter import scatter_chart
from analysis.charts.svg import Series, empty_chart

__all__ = [
    "Effect",
    "Interval",
    "Series",
    "category_accuracy_from_metaeval",
    "effects_chart",
    "interval_bars_chart",
    "probe_effects_from_metaeval",
    "empty_chart",
    "heatmap_chart",
    "heatmap_from_agreement",
    "radar_chart",
    "RADAR_VIEWS",
    "radar_from_agreement",
    "rank_bars_chart",
    "rank_bars_from_agreement",
    "ranks_from_means",
    "scatter_chart",
    "scatter_from_agreement",
]
