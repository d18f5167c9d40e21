"""HTML pages of the annotation app: datasets, imports, rubrics, campaigns, rating, pairwise.

Function views, thin: parse the request, call one service or selector, render. The
permission checks live in the selectors (`campaign_get_for_user` for researchers,
`campaign_get_for_rater` / `assignment_get_for_rater` for raters), so a rater who asks
for another rater's assignment or a campaign they are not in gets a 404, exactly as
for an id that does not exist.

Blind rating: the rating templates only ever receive the rater's own assignment and
scores. Other raters' scores and judge scores are never queried here, and the model
name is put in the context only when the campaign shows it.
"""
