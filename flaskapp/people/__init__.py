"""Workspaces and people (issue 35): instance admins create, rename and delete
workspaces; a workspace's owners manage its members (add, change role, remove, reset
a password), its invite links and bulk accounts from a CSV. Every change is written
to the audit log (`flaskapp.workspaces.audit_record`) with its before and after.

- `services/workspaces.py`: create, rename, delete an empty workspace (admins).
- `services/members.py`: add, change role, remove, reset a password (owners); the
  last owner rule; which accounts an owner may reset.
- `services/invites.py`: invite links (random token, stored hashed; expiry; uses).
- `services/bulk.py`: accounts from a CSV, all or nothing, problems by line.
- `selectors.py`: the reads, permission-scoped.
- `views/` and `urls.py`: the pages; `api/` (`workspaces.py`, `urls.py`): the API.
"""
