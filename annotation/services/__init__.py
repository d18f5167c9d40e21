"""Writes and workflows of the annotation app, one module per subject. Callers import
the defining module (`from annotation.services.campaigns import campaign_create`);
this package re-exports nothing (README, Layout: package re-exports)."""
