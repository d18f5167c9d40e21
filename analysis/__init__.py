"""Analysis: reads human and judge scores, computes and draws; writes only the cache."""
