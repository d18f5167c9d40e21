"""The local demo of `make run`: demo users, the bundled demo dataset, a campaign, a
baseline judge run and generated example ratings and preferences (`manage.py
load_demo`). It calls the services of annotation and judging like any other client;
nothing of ours imports it but the launcher, which prints its logins."""
