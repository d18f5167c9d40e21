"""HTML pages of rating campaigns: researchers' campaign pages and the raters' rating UI.

Function views, thin: parse the request, call one service or selector, render. The
permission checks live in the selectors (`campaign_get_for_user` for researchers,
`campaign_get_for_rater` / `assignment_get_for_rater` for raters), so a rater who asks
for another rater's assignment or a campaign they are not in gets a 404, exactly as
for an id that does not exist.

Blind rating: the rating templates only ever receive the rater's own assignment and
scores. Other raters' scores and judge scores are never queried here, and the model
name is put in the context only when the campaign shows it.
"""

from .campaigns import (
    campaign_detail,
    campaign_list,
    campaign_new,
    campaign_raters,
    campaign_status,
)
from .rating import (
    assignment_review,
    assignment_skip,
    assignment_submit,
    rate_history,
    rate_home,
    rate_next,
)

__all__ = [
    "assignment_review",
    "assignment_skip",
    "assignment_submit",
    "campaign_detail",
    "campaign_list",
    "campaign_new",
    "campaign_raters",
    "campaign_status",
    "rate_history",
    "rate_home",
    "rate_next",
]
