"""REST API of the judging app (mounted at /api/ by flaskapp.urls)."""
