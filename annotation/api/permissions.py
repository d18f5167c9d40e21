"""Role checks for the REST API, the same rules as the pages (flaskapp.roles).

These guard the door; the `*_for_user` selectors check again, so a view that forgets
its permission class still cannot leak data. An anonymous request is refused with 401
(DRF asks for credentials because token auth comes first), a wrong role with 403.
"""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from flaskapp import roles


class IsResearcher(BasePermission):
    """Researchers and admins."""

    message = "This needs the researcher or admin role."

    def has_permission(self, request, view) -> bool:
        return roles.is_researcher(request.user)


class IsReviewer(BasePermission):
    """Reviewers, researchers and admins (adjudication)."""

    message = "This needs the reviewer, researcher or admin role."

    def has_permission(self, request, view) -> bool:
        return roles.is_reviewer(request.user)


class IsAdmin(BasePermission):
    """Admins (and superusers)."""

    message = "This needs the admin role."

    def has_permission(self, request, view) -> bool:
        return roles.is_admin(request.user)
