"""Judge endpoints: the one home of the rules on what a judge may call and with which key.

An *endpoint* is the pair (`base_url`, `api_key_env`) of a judge config. The worker
sends the value of the environment variable `api_key_env` to `base_url` as
``Authorization: Bearer ...``, so whoever sets the pair decides which secret of the
server leaves it and where to. Three rules make that an admin decision by design:

=====================  ==================================================================
rule                   where it holds
=====================  ==================================================================
declared key names     a config may only name a variable matching ``JUDGE_KEY_ENV_ALLOWED``
                       (default ``JUDGE_KEY_*,OPENAI_API_KEY``; names or glob patterns).
                       Only those are ever read (`llm.api_key_from_env`) or reported as
                       set or unset (`selectors.runs.api_key_is_set`); every other
                       variable of the server (``DJANGO_SECRET_KEY``, ``DATABASE_URL``,
                       ``HOME``) does not exist as far as judging is concerned.
allowed hosts          with ``JUDGE_ALLOWED_HOSTS`` set (host names or glob patterns,
                       each with an optional port: ``localhost:8000``), a base URL must
                       point at one of them: checked when a config is saved, when a run
                       starts, and by the client before every call (a permanent
                       ``refused`` error; nothing is sent). Empty (the default, for local
                       use): any host.
service ports          whatever the hosts, the ports of the deployment's own services
                       (``JUDGE_BLOCKED_PORTS``: PostgreSQL, Redis, the app's ``PORT``,
                       ...) are refused unless an allowed-hosts entry names the host
                       WITH that port, so allowing ``localhost`` does not open Redis.
endpoint rights        only admins, superusers and researchers holding the
                       ``judging.manage_endpoints`` permission may introduce a new pair
                       (`can_manage_endpoints`); other researchers may reuse a pair such
                       a person configured. Enforced by `services.configs`.
=====================  ==================================================================

The functions here read settings only (no database), so `judging.llm` can ask them at
call time; `settings` falls back to the environment when Django is not configured.
"""

from __future__ import annotations

import os
import re
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from django.conf import settings

PERMISSION = "judging.manage_endpoints"
DEFAULT_KEY_ENV_ALLOWED = "JUDGE_KEY_*,OPENAI_API_KEY"
# The ports of services a deployment runs beside the app, refused to judges unless
# allowed by host AND port: SSH, SMTP, PostgreSQL, MySQL, Redis, AMQP, memcached,
# MongoDB, Elasticsearch, the Docker API, Celery Flower (the app's PORT is added).
DEFAULT_BLOCKED_PORTS = "22,25,2375,2376,3306,5432,5555,5672,6379,9200,11211,27017"
# What an environment variable's name looks like; anything else is probably a pasted key.
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
URL_PROBLEM = "must be an http(s) URL, e.g. https://api.openai.com/v1"


def _setting(name: str, default: str) -> list[str]:
    if settings.configured:
        value = getattr(settings, name, None)
    else:
        value = os.environ.get(name)
    if value is None:  # unset: the default (an empty list stays empty)
        value = default
    if isinstance(value, str):
        value = value.split(",")
    return [v.strip() for v in value if v and v.strip()]


def key_env_patterns() -> list[str]:
    """The declared key variables: names or glob patterns (``JUDGE_KEY_ENV_ALLOWED``)."""
    return _setting("JUDGE_KEY_ENV_ALLOWED", DEFAULT_KEY_ENV_ALLOWED)


def host_patterns() -> list[str]:
    """The hosts judges may call (``JUDGE_ALLOWED_HOSTS``), each ``host`` or
    ``host:port``; empty means any host."""
    return [p.lower() for p in _setting("JUDGE_ALLOWED_HOSTS", "")]


def blocked_ports() -> set[int]:
    """The service ports no judge may call unless an allowed-hosts entry names the
    host with that port (``JUDGE_BLOCKED_PORTS``; `DEFAULT_BLOCKED_PORTS` and the
    app's own ``PORT``)."""
    ports = {int(p) for p in _setting("JUDGE_BLOCKED_PORTS", DEFAULT_BLOCKED_PORTS)
             if p.isdigit()}  # fmt: skip
    app_port = os.environ.get("PORT", "8000").strip()
    if app_port.isdigit():
        ports.add(int(app_port))
    return ports


def url_port(url: str | None) -> int | None:
    """The port `url` connects to (the scheme's default when none is written); None
    when it has none or an invalid one."""
    try:
        parts = urlsplit(url or "")
        port = parts.port
    except ValueError:
        return None
    if port is None:
        port = {"http": 80, "https": 443}.get(parts.scheme.lower())
    return port


def _split_pattern(pattern: str) -> tuple[str, int | None]:
    """``host`` -> (host, None), ``host:8000`` / ``[::1]:8000`` -> (host, 8000)."""
    if pattern.startswith("["):
        host, _, rest = pattern[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif pattern.count(":") == 1:
        host, _, port = pattern.partition(":")
    else:
        host, port = pattern, ""
    return host, int(port) if port.isdigit() else None


def key_env_declared(name: str | None) -> bool:
    """Whether `name` is a declared key variable: shaped like an environment variable's
    name and matching one of `key_env_patterns` (case-sensitive, as the environment
    is). The empty name (no key) is not declared: there is nothing to read."""
    if not name or not ENV_NAME.match(name):
        return False
    return any(fnmatchcase(name, pattern) for pattern in key_env_patterns())


def url_host(url: str | None) -> str:
    """The host name `url` connects to, lower-cased ("" when there is none)."""
    try:
        return (urlsplit(url or "").hostname or "").lower()
    except ValueError:
        return ""


def host_allowed(url: str | None) -> bool:
    """Whether a judge may send requests to `url`: its host (and port, for an entry
    that names one) matches one of `host_patterns`, or that list is empty; and its
    port is not one of `blocked_ports` unless the matching entry names that port. A
    URL with user info or a backslash is never allowed when the list is set: parsers
    disagree on which host it names."""
    return not _host_problem(url)


def _host_problem(url: str | None) -> str:
    """Why `url`'s host or port may not be called ("" when it may)."""
    patterns = host_patterns()
    host, port = url_host(url), url_port(url)
    if patterns and not _plain_url(url or ""):
        return f"the host {host or '(none)'!r} is not in JUDGE_ALLOWED_HOSTS"
    if not patterns and port not in blocked_ports():
        return ""
    named_port = False
    for pattern in patterns:
        want_host, want_port = _split_pattern(pattern)
        if host and fnmatchcase(host, want_host) and want_port in (None, port):
            if want_port == port:
                named_port = True
                break
            if port not in blocked_ports():
                return ""
    if named_port:
        return ""
    if port in blocked_ports() and (not patterns or _host_listed(host, patterns)):
        return (
            f"port {port} is a service port (JUDGE_BLOCKED_PORTS): judges may call "
            f"it only where JUDGE_ALLOWED_HOSTS names the host with it ({host}:{port})"
        )
    return f"the host {host or '(none)'!r} is not in JUDGE_ALLOWED_HOSTS"


def _host_listed(host: str, patterns: list[str]) -> bool:
    return bool(host) and any(fnmatchcase(host, _split_pattern(p)[0]) for p in patterns)


def host_refusal(url: str | None) -> str:
    """Why a call to `url` is refused ("" when it is allowed), for the call's error."""
    problem = _host_problem(url)
    if not problem:
        return ""
    return f"{problem}; nothing was sent"


def key_env_problem(name: str | None) -> str:
    """Why `name` cannot be a config's key variable ("" when it can, or is empty).

    Never echoes `name`: what was typed may be a key pasted by mistake."""
    if not name:
        return ""
    if not ENV_NAME.match(name):
        return (
            "must be the NAME of an environment variable (like OPENAI_API_KEY), not "
            "the key itself; keys are never stored"
        )
    if not key_env_declared(name):
        return (
            "is not a declared key variable: an admin declares the names judges may "
            f"use in JUDGE_KEY_ENV_ALLOWED (now {', '.join(key_env_patterns())})"
        )
    return ""


def endpoint_problems(base_url: str | None, api_key_env: str | None) -> dict[str, str]:
    """What is wrong with the endpoint (`base_url`, `api_key_env`), field -> message;
    empty when a judge may use it. Empty values are not problems here (whether a
    backend needs a URL is the config's rule)."""
    problems: dict[str, str] = {}
    if base_url:
        if not base_url.startswith(("http://", "https://")) or not url_host(base_url):
            problems["base_url"] = URL_PROBLEM
        elif not _plain_url(base_url):
            problems["base_url"] = (
                "must not contain user info (user:password@) or a backslash; give the "
                "key as an environment variable's name"
            )
        elif problem := _host_problem(base_url):
            allowed = ", ".join(host_patterns()) or "any host but service ports"
            problems["base_url"] = f"{problem} (now: {allowed})"
    key_problem = key_env_problem(api_key_env)
    if key_problem:
        problems["api_key_env"] = key_problem
    return problems


def call_refusal(base_url: str | None, api_key_env: str | None) -> str:
    """Why calls to this endpoint must not be sent ("" when they may), checked by the
    worker at call time for runs frozen before the rules changed."""
    problems = endpoint_problems(base_url, api_key_env)
    if "api_key_env" in problems:
        return (
            "the key variable is not a declared one (JUDGE_KEY_ENV_ALLOWED); "
            "nothing was sent"
        )
    if "base_url" in problems:
        return host_refusal(base_url) or f"the base URL {problems['base_url']}"
    return ""


def can_manage_endpoints(user) -> bool:
    """Whether `user` may introduce a new endpoint or change a config's endpoint:
    admins and superusers, and researchers holding ``judging.manage_endpoints``."""
    from flaskapp import roles

    if user is None or not getattr(user, "is_authenticated", False):
        return False
    if roles.is_admin(user):
        return True
    return roles.is_researcher(user) and user.has_perm(PERMISSION)


def _plain_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return "@" not in parts.netloc and "\\" not in url and not re.search(r"\s", url)
