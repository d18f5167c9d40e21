"""Empty states say what to do in the browser, never "run manage.py" (issue 37)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.django_db
def test_the_metaeval_home_without_pairs_points_to_the_upload_page(
    researcher, client_for
):
    html = client_for(researcher).get("/metaeval/").content.decode()
    assert "No dataset has preference pairs yet" in html
    assert 'href="/upload/"' in html
    assert "manage.py" not in html


def test_no_empty_state_in_a_template_says_manage_py():
    """An empty state (`class="empty"`, "{% empty %}" branches, "No ... yet") never
    sends the reader to a terminal."""
    offenders = []
    for path in (ROOT / "templates").rglob("*.html"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "manage.py" in line and ('class="empty"' in line or "yet" in line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}")
    assert offenders == []
