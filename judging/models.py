"""Judge configurations, runs, calls and scores (see issue: model judges)."""
