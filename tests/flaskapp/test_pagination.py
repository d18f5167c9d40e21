"""The one pager partial (templates/partials/pagination.html) used by every list."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.core.paginator import Paginator
from django.template.loader import render_to_string
from django.test import RequestFactory


def _request(query=None):
    request = RequestFactory().get("/runs/", query or {})
    request.user = AnonymousUser()  # the context processors read it
    return request


def _render(page_number: int, **context) -> str:
    request = _request({"status": "done", "page": page_number})
    page = Paginator(list(range(50)), 10).page(page_number)
    return render_to_string(
        "partials/pagination.html", {"page": page, **context}, request=request
    )


def test_links_keep_the_query_and_change_the_page():
    html = _render(2, pager_label="Run pages", pager_url="", pager_target="")
    assert 'aria-label="Run pages"' in html
    assert "Page 2 of 5" in html
    assert 'href="?status=done&amp;page=1"' in html
    assert 'href="?status=done&amp;page=3"' in html
    assert "hx-get" not in html


def test_with_a_target_the_links_swap_it_through_htmx_and_keep_a_real_href():
    html = _render(
        1, pager_label="Response pages", pager_url="/d/1/responses/", pager_target="r"
    )
    assert "Previous" not in html  # the first page
    assert 'href="/d/1/responses/?status=done&amp;page=2"' in html
    assert 'hx-get="/d/1/responses/?status=done&amp;page=2"' in html
    assert 'hx-target="#r"' in html and 'hx-push-url="true"' in html


def test_a_single_page_renders_no_pager():
    request = _request()
    page = Paginator([1, 2], 10).page(1)
    html = render_to_string("partials/pagination.html", {"page": page}, request=request)
    assert "pagination" not in html
