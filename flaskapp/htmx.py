"""How every app's pages answer htmx: one URL serves the page and its fragment.

`render_page_or_fragment` renders ``template#fragment`` (django-template-partials) for
an htmx request and the whole page otherwise, and marks the response as varying on
``HX-Request`` so that caches keep the two bodies apart. A history restore (the back
button after htmx's cache expired) gets the whole page. Polling fragments answer
`HTMX_STOP_POLLING` when there is nothing left to watch.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

# htmx stops polling when a response has this status.
HTMX_STOP_POLLING = 286


def wants_fragment(request: HttpRequest) -> bool:
    """True for an htmx request that swaps a fragment (not a history restore)."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def render_page_or_fragment(
    request: HttpRequest,
    template: str,
    fragment: str | None,
    context: dict,
    status: int = 200,
) -> HttpResponse:
    """The fragment `fragment` of `template` for htmx, else the page (see module)."""
    name = (
        f"{template}#{fragment}" if fragment and wants_fragment(request) else template
    )
    response = render(request, name, context, status=status)
    patch_vary_headers(response, ("HX-Request",))
    return response
