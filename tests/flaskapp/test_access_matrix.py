"""The access matrix (issue 35): every URL path and every API operation of
``url_inventory.json`` x every role.

The roles: the owner, researcher, reviewer and rater of workspace A, the owner and
the rater of workspace B only (``other``, ``other-rater``), an anonymous visitor and
an instance admin (a superuser who is a member nowhere). One world per module (`matrix_world`): both
workspaces hold one of everything a URL can name; each path's parameters are filled
with A's objects.

What each cell expects, from the rule of its endpoint (``PAGE_RULES``,
``API_RULES``; the first rule whose pattern matches the path wins):

- anonymous: a page redirects to the login page, the API answers 401 or 403;
- ``other`` on an endpoint that names an object of A: 404 (never a 403 that would
  confirm it exists); on one that names no object (a list, a "new" page): whatever
  its own role in B allows, and the answer shows nothing of A (no ``alpha-`` name;
  A's roles likewise see no ``bravo-`` name); ``other-rater``: 404, or the 403
  that a rater gets for any id before any lookup;
- a role of A below the rule's minimum: 403, or 404 where the product hides the
  object from that role (``low=404``);
- a role at or above the minimum (and the admin): neither 403, 404 nor a login
  redirect;
- nobody, ever: a 500.

Pages are asked with GET (a page that only takes POST answers GET with 405 and is
then asked with an empty POST); API operations with their own method and an empty
body. Each case runs in its own rolled-back transaction (pytest-django), so an
allowed unsafe request changes nothing the next case sees; a task enqueued on
commit never leaves.

A new endpoint: add it to the inventory (test_url_inventory.py says how) and a rule
here; until then `test_every_endpoint_has_a_rule` fails and so do its cells. Rules
go by path pattern (`fnmatch`, ``*`` crossing slashes), first match wins, so another
branch's endpoints are one line each, e.g. ``("* api/workspaces/*", _r(OWNER))``;
a new path parameter needs an object in `matrix_world.build_side` and its id in
`_value` (the cells say so). ``Rule(INSTANCE_ADMIN)``: instance admins only (403
for every member of A; on a path naming A's workspace, 404 for non-members, as for
any object of A; ``names_object=False``: 403 for everyone, before any lookup).

Beyond the grid: another workspace's ids in query strings, paths that put A's
object inside B's (campaign + response, ...), and API bodies and page forms naming
A's objects, are refused without naming them and change nothing.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client
from rest_framework.test import APIClient

from annotation.bootstrap import ensure_builtin_data
from tests.factories import api_token
from tests.flaskapp.matrix_world import SKILL_KEY, build_side

INVENTORY = json.loads((Path(__file__).parent / "url_inventory.json").read_text())

OWNER, RESEARCHER, REVIEWER, RATER = "owner", "researcher", "reviewer", "rater"
RANK = {RATER: 1, REVIEWER: 2, RESEARCHER: 3, OWNER: 4}
# Roles held in workspace A; "other" is an owner of B; "admin" an instance admin.
ROLES = (
    OWNER,
    RESEARCHER,
    REVIEWER,
    RATER,
    "other",
    "other-rater",
    "anonymous",
    "admin",
)

# Which outcomes a cell may have.
OK = "ok"  # not 403, 404, 500, nor a login redirect
FORBIDDEN = 403
HIDDEN = 404
LOGIN = "login"  # pages: a redirect to the login page; API: 401 or 403
# A role too low everywhere is refused before the object is looked up (403 for any
# id, `workspaces.require_role_somewhere`); else the object is not there (404).
REFUSED = "403-or-404"


@dataclass(frozen=True)
class Rule:
    """Who may use an endpoint.

    `need`: the least role of A (None: anyone signed in; ``PUBLIC``: anyone).
    `names_object`: the path names an object of A (another workspace's member gets
    a 404); False for lists and creation pages, which work in the user's own
    workspace. `low`: what a role below `need` gets (403, or 404 where the product
    hides the object from that role). `only`: the one role of A served here (a
    rater's own work: the others, the admin too, get `low`). `refused`: roles at or
    above `need` that still get `low`. `body_first`: an unsafe operation that checks
    its body before its object, so an empty body is a 400 for everyone (the same
    answer for any id: it confirms nothing)."""

    need: str | None = RESEARCHER
    names_object: bool = True
    low: int = FORBIDDEN
    only: str | None = None
    refused: tuple[str, ...] = ()
    body_first: bool = False


PUBLIC = "public"
# Instance admins only (workspaces and users of the instance): A's members get a 403;
# a non-member gets the 404 of a workspace that is not theirs where the path names
# A's workspace, else (``names_object=False``) the same 403 before any lookup.
INSTANCE_ADMIN = "instance-admin"


def _r(need=RESEARCHER, **kw) -> Rule:
    return Rule(need, **kw)


# --- The rule table -------------------------------------------------------------------
# Lists and creation pages: they name no object and work in the user's own workspace.
_OWN_WORKSPACE = _r(names_object=False)
_SIGNED_IN = Rule(None, names_object=False)
# The rater's own work (items, history, progress): served to the campaign's raters
# only; everyone else, admins included, finds nothing there (404). Writes check their
# body first: an empty body is a 400 for any id, which confirms nothing.
_RATER_WORK = Rule(RATER, low=HIDDEN, only=RATER)
_RATER_WRITE = Rule(RATER, low=HIDDEN, only=RATER, body_first=True)

# Pages: the path as the URL resolver spells it, without the leading slash.
PAGE_RULES: list[tuple[str, Rule]] = [
    ("login/", Rule(PUBLIC)),
    ("logout/", Rule(PUBLIC)),  # POST only; signs out and shows the login page
    ("", _SIGNED_IN),  # home: each role's own start page
    ("account/password/", _SIGNED_IN),
    ("api/schema/", _SIGNED_IN),
    ("api/docs/", _SIGNED_IN),
    ("workspaces/switch/", Rule(RATER)),  # the body names workspace A
    ("rate/", _SIGNED_IN),
    ("rate/*", _RATER_WORK),
    ("pairwise/compare/*", _RATER_WORK),
    # Researchers' pairwise campaigns and a rater's pairwise work; nothing for a
    # reviewer (who is neither).
    ("pairwise/", Rule(RATER, names_object=False, refused=(REVIEWER,))),
    ("pairwise/campaigns/new/", _OWN_WORKSPACE),
    ("pairwise/campaigns/*", _r()),
    ("adjudication/", Rule(REVIEWER, names_object=False)),
    ("campaigns/*/adjudication/rule/", _r()),
    ("campaigns/*/adjudication/*", Rule(REVIEWER)),
    ("campaigns/*/history/", Rule(REVIEWER)),
    ("campaigns/new/", _OWN_WORKSPACE),
    ("campaigns/", _OWN_WORKSPACE),
    ("campaigns/*", _r()),  # sampling/new/ names its dataset in the query
    ("datasets/", _OWN_WORKSPACE),
    ("datasets/*", _r()),
    ("rubrics/", _OWN_WORKSPACE),
    ("rubrics/import/", _OWN_WORKSPACE),
    ("rubrics/new/", _OWN_WORKSPACE),
    ("rubrics/preview/", _OWN_WORKSPACE),  # POST only; checks a text, writes nothing
    ("rubrics/*", _r()),
    ("imports/", _OWN_WORKSPACE),
    ("imports/new/", _OWN_WORKSPACE),
    ("imports/*", _r()),
    ("raters/", _OWN_WORKSPACE),
    ("raters/new/", _OWN_WORKSPACE),
    ("raters/*", _r()),
    ("judges/", _OWN_WORKSPACE),
    ("judges/new/", _OWN_WORKSPACE),
    ("judges/*", _r()),
    ("prompts/", _OWN_WORKSPACE),
    ("prompts/diff/", _OWN_WORKSPACE),
    ("prompts/*", _r()),
    # Metadata suggestions change the dataset's instructions: the workspace's owner.
    ("runs/*/suggestions/*/*", _r(OWNER)),
    ("runs/*/suggestions/accept-all/", _r(OWNER)),
    ("runs/", _OWN_WORKSPACE),
    ("runs/new/", _OWN_WORKSPACE),
    ("runs/import/", _OWN_WORKSPACE),
    ("runs/panel/new/", _OWN_WORKSPACE),
    ("runs/*/diff/*", _r()),  # the item-level diff of two runs (issue 37)
    ("runs/*", _r()),
    ("agreement/", _OWN_WORKSPACE),
    ("agreement/*", _r()),
    ("metaeval/", _OWN_WORKSPACE),
    ("metaeval/*", _r()),
    ("experiments/", _OWN_WORKSPACE),
    ("experiments/*", _r()),
    ("instructions/*", _r()),
    ("results/", _OWN_WORKSPACE),
    ("reliability/*", _r()),
    ("report/*", _r()),
    ("estimates/*", _r()),
    ("leaderboard/*", _r()),
    ("jobs/*", _r()),
    ("sso/*", Rule(PUBLIC)),
    # An invite link: its page and its join/sign-up form are for anyone holding the
    # token, signed in or not (whoever follows it joins A; rolled back per case).
    ("invite/*", Rule(PUBLIC)),
    ("upload/", _OWN_WORKSPACE),
    ("users/", Rule(INSTANCE_ADMIN, names_object=False)),
    ("workspaces/", _SIGNED_IN),
    ("workspaces/new/", Rule(INSTANCE_ADMIN, names_object=False)),
    ("workspaces/*/rename/", Rule(INSTANCE_ADMIN)),
    ("workspaces/*/delete/", Rule(INSTANCE_ADMIN)),
    # Stored judge API keys: the workspace's researchers and owners.
    ("workspaces/*/keys/", _r()),
    ("workspaces/*/notifications/", _r(OWNER)),  # e-mail, webhook, delivery log
    ("workspaces/*", _r(OWNER)),  # settings, members, invites, audit
    # The keys home: the workspaces whose keys the user manages (none for a rater).
    ("keys/", _SIGNED_IN),
    ("keys/*", _r()),
]

# API operations: "METHOD path", the path as the schema spells it ({param}).
API_RULES: list[tuple[str, Rule]] = [
    ("POST api/auth/token/", Rule(PUBLIC)),  # signs in with a password
    ("* api/auth/*", _SIGNED_IN),
    ("GET api/rate/campaigns/", _SIGNED_IN),
    ("GET api/rate/*", _RATER_WORK),
    ("POST api/rate/campaigns/*", _RATER_WORK),
    ("* api/rate/*", _RATER_WRITE),
    ("GET api/pairwise/rate/*", _RATER_WORK),
    ("POST api/pairwise/rate/campaigns/*", _RATER_WORK),
    ("* api/pairwise/rate/*", _RATER_WRITE),
    ("* api/campaigns/*/adjudication/rule/", _r()),
    ("* api/campaigns/*/adjudication/*", Rule(REVIEWER)),
    ("* api/campaigns/*/history/", Rule(REVIEWER)),
    # Lists and creations: in the user's own workspaces (a dataset named by name is
    # looked for in the user's workspace, so A's name is a new dataset of B's).
    ("GET api/campaigns/", _OWN_WORKSPACE),
    ("POST api/campaigns/", _OWN_WORKSPACE),
    ("POST api/campaigns/sampling/", _OWN_WORKSPACE),
    ("GET api/pairwise/campaigns/", _OWN_WORKSPACE),
    ("POST api/pairwise/campaigns/", _OWN_WORKSPACE),
    ("GET api/datasets/", _OWN_WORKSPACE),
    ("POST api/datasets/{dataset_name}/*", _OWN_WORKSPACE),
    ("GET api/rubrics/", _OWN_WORKSPACE),
    ("POST api/rubrics/import/", _OWN_WORKSPACE),
    ("GET api/imports/", _OWN_WORKSPACE),
    ("GET api/judges/", _OWN_WORKSPACE),
    ("POST api/judges/", _OWN_WORKSPACE),
    ("GET api/runs/", _OWN_WORKSPACE),
    ("POST api/runs/", _OWN_WORKSPACE),
    ("POST api/runs/import/", _OWN_WORKSPACE),
    ("POST api/runs/panel/", _OWN_WORKSPACE),
    ("GET api/experiments/", _OWN_WORKSPACE),
    ("POST api/experiments/", _OWN_WORKSPACE),
    # Everything that names an object of A: its researchers.
    ("* api/campaigns/*", _r()),
    ("* api/pairwise/campaigns/*", _r()),
    ("* api/datasets/*", _r()),
    ("* api/instructions/*", _r()),
    ("* api/imports/*", _r()),
    ("* api/rubrics/*", _r()),
    ("* api/judges/*", _r()),
    ("* api/runs/*", _r()),
    ("* api/prompts/*", _r()),
    ("* api/experiments/*", _r()),
    ("* api/jobs/*", _r()),
    ("GET api/workspaces/", _SIGNED_IN),
    ("POST api/workspaces/", Rule(INSTANCE_ADMIN, names_object=False)),
    ("GET api/workspaces/{workspace_id}/", Rule(RATER)),
    ("PATCH api/workspaces/{workspace_id}/", Rule(INSTANCE_ADMIN)),
    ("DELETE api/workspaces/{workspace_id}/", Rule(INSTANCE_ADMIN)),
    ("* api/workspaces/*", _r(OWNER)),  # members, invites
    # The audit log and the keys list name A's workspace in their query (QUERY), a
    # key's creation in its body (API_BODY).
    ("GET api/audit/", _r(OWNER)),
    ("* api/keys/", _r()),
    ("* api/keys/*", _r()),
]
# Paths under api/ that are no API operation (the schema and its docs).
API_PAGES = ("api/schema/", "api/docs/")
# POST bodies of pages whose object is named in the body, not the path.
BODY = {"workspaces/switch/": lambda side: {"workspace": side.workspace.pk}}
# Bodies of API operations whose object is named in the body ("METHOD path").
API_BODY = {
    "POST api/keys/": lambda side: {
        "workspace": side.workspace.pk,
        "name": "matrix-key",
        "value": "sk-matrix-0123456789",
        "allowed_hosts": ["api.example.com"],
    },
}


def _rule_for(key: str, rules) -> Rule | None:
    for pattern, rule in rules:
        if fnmatch.fnmatchcase(key, pattern):
            return rule
    return None


def _pages() -> list[str]:
    return [
        p for p in INVENTORY["url_paths"] if not p.startswith("api/") or p in API_PAGES
    ]


def _operations() -> list[tuple[str, str]]:
    return [
        (op.split()[0], op.split()[1].lstrip("/")) for op in INVENTORY["api_operations"]
    ]


# --- The world ------------------------------------------------------------------------


@dataclass
class World:
    a: object
    b: object
    admin: User

    def user(self, role: str) -> User | None:
        if role == "anonymous":
            return None
        if role == "admin":
            return self.admin
        if role == "other":
            return self.b.users[OWNER]
        if role == "other-rater":
            return self.b.users[RATER]
        return self.a.users[role]


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """Both workspaces, built once for the module inside a transaction that is
    rolled back at its end; each test runs in a savepoint inside it."""
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            # A transactional test run before this module in the same process may
            # have flushed the built-in rubric and role groups.
            ensure_builtin_data()
            yield World(
                a=build_side("alpha", "alpha"),
                b=build_side("bravo", "bravo"),
                admin=User.objects.create_superuser("matrix-admin", "", "pw-123456"),
            )
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


@pytest.fixture(scope="module", autouse=True)
def _no_throttle():
    """The matrix asks hundreds of questions per user; a 429 would hide the answer."""
    from django.conf import settings

    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    saved = dict(rates)
    rates.update(user="", heavy="")
    yield
    rates.clear()
    rates.update(saved)


PARAM = re.compile(r"<(?:\w+:)?(\w+)>|\{(\w+)\}")


def _value(name: str, path: str, side) -> str:
    o = side.objects
    pairwise = path.startswith(("pairwise/", "api/pairwise/"))
    values = {
        "dataset_id": o["dataset"].pk,
        "dataset_name": o["dataset"].name,
        "campaign_id": (
            o["pair_campaign"]
            if pairwise
            else o["sampling_campaign"]
            if "sampling" in path
            else o["campaign"]
        ).pk,
        "assignment_id": (o["pair_assignment"] if pairwise else o["assignment"]).pk,
        "response_id": (o["gold_response"] if "gold/" in path else o["response"]).pk,
        "rater_id": side.users[RATER].pk,
        "run_id": (o["metadata_run"] if "suggestions" in path else o["run"]).pk,
        "other_id": o["metadata_run"].pk,
        "suggestion_id": o["suggestion"].pk,
        "config_id": o["config"].pk,
        "prompt_id": o["prompt"].pk,
        "instruction_id": o["instruction"].pk,
        "job_id": (o["import_job"] if "imports/" in path else o["job"]).pk,
        "experiment_id": o["experiment"].pk,
        "rubric_id": o["rubric"].pk,
        "workspace_id": side.workspace.pk,
        "key_id": o["key"].pk,
        "invite_id": o["invite"].pk,
        "token": o["invite_token"],
        "user_id": side.users[RATER].pk,
        "skill_key": SKILL_KEY,
        "table": "table",
        "kind": "heatmap",
    }
    assert name in values, (
        f"no value for the path parameter {name!r} of {path!r}: add an object to "
        "matrix_world.build_side and its id here"
    )
    return str(values[name])


# Pages and API reads that name their object in the query string.
QUERY = {
    "campaigns/sampling/new/": "?dataset={dataset_id}",
    "api/audit/": "?workspace={workspace_id}",
    "api/keys/": "?workspace={workspace_id}",
}


NOWHERE = 2_000_000_000  # an id no object has


def _nowhere(path: str, side) -> str:
    """`path` with every id no object has (slugs and names from `side`)."""

    def value(match):
        name = match.group(1) or match.group(2)
        return str(NOWHERE) if name.endswith("_id") else _value(name, path, side)

    return "/" + PARAM.sub(value, path)


def fill(path: str, side) -> str:
    def value(match):
        return _value(match.group(1) or match.group(2), path, side)

    return "/" + PARAM.sub(value, path + QUERY.get(path, ""))


def _body(response) -> str:
    if response.streaming:
        data = b"".join(response.streaming_content)
    else:
        data = response.content
    return data.decode(errors="replace")


def _ask(world, role, method, url, *, api, htmx=False, data=None, raise_exc=True):
    user = world.user(role)
    if user is not None:
        user = User.objects.get(pk=user.pk)  # a fresh object: no role cache
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    if api:
        client = APIClient(raise_request_exception=raise_exc)
        if user is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Token {api_token(user)}")
        return getattr(client, method.lower())(url, data, format="json", **headers)
    client = Client(raise_request_exception=raise_exc)
    if user is not None:
        client.force_login(user)
    response = client.get(url, **headers)
    if response.status_code == 405:
        response = client.post(url, data or {}, **headers)
    return response


def _expect(rule: Rule, role: str):
    """The outcome `rule` promises `role` (see the module's docstring)."""
    if rule.need == PUBLIC:
        return OK
    if role == "anonymous":
        return LOGIN
    if rule.need == INSTANCE_ADMIN:
        if role == "admin":
            return OK
        if role in ("other", "other-rater") and rule.names_object:
            return HIDDEN
        return FORBIDDEN
    if role == "other":
        return HIDDEN if rule.names_object else OK
    if role == "other-rater":
        if rule.only:
            return rule.low
        if rule.names_object:
            return HIDDEN if rule.need == RATER else REFUSED
        if rule.need is None or (rule.need == RATER and RATER not in rule.refused):
            return OK
        return rule.low
    if rule.only:
        return OK if role == rule.only else rule.low
    if role == "admin" or rule.need is None:
        return OK
    if RANK[role] < RANK[rule.need] or role in rule.refused:
        return rule.low
    return OK


def _is_login_redirect(response) -> bool:
    return response.status_code == 302 and response["Location"].startswith("/login/")


def _check(response, expected, rule: Rule, *, api: bool, unsafe: bool) -> None:
    code = response.status_code
    where = f"{response.request['REQUEST_METHOD']} {response.request['PATH_INFO']}"
    assert code < 500, f"{where}: {code}"
    if rule.need == PUBLIC:
        return
    if expected == OK:
        assert code not in (401, 403, 404) and not _is_login_redirect(response), (
            f"{where}: {code} {_body(response)[:300]}"
        )
    elif expected == LOGIN:
        if api:
            assert code in (401, 403), f"{where}: {code}"
        else:
            assert _is_login_redirect(response), f"{where}: {code}"
    else:
        allowed = {FORBIDDEN, HIDDEN} if expected == REFUSED else {expected}
        allowed |= {400} if rule.body_first and unsafe else set()
        assert code in allowed, f"{where}: {code}, expected {expected}"


def _api_path(url_path: str) -> str:
    return re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", url_path)


def test_every_endpoint_has_a_rule():
    """A new URL or API operation needs its line in the rule table."""
    missing = [p for p in _pages() if _rule_for(p, PAGE_RULES) is None]
    missing += [
        f"{m} {p}" for m, p in _operations() if _rule_for(f"{m} {p}", API_RULES) is None
    ]
    operation_paths = {path for _, path in _operations()}
    missing += [
        f"{p} (an api/ path with no API operation: add it to API_PAGES)"
        for p in INVENTORY["url_paths"]
        if p.startswith("api/")
        and p not in API_PAGES
        and _api_path(p) not in operation_paths
    ]
    assert not missing, "no rule for: " + ", ".join(missing)


def _marker_free(response, side) -> None:
    """What a member of one workspace is shown holds no name of the other (`side`)."""
    body = _body(response)
    marker = f"{side.marker}-"
    assert marker not in body, (
        f"{response.request['PATH_INFO']} shows workspace {side.marker}'s objects: "
        + body[max(0, body.index(marker) - 120) :][:240]
    )


def _no_leak(response, world, role) -> None:
    if role in ("other", "other-rater"):
        _marker_free(response, world.a)
    elif role in RANK:
        _marker_free(response, world.b)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("path", _pages())
def test_page(world, db, path, role):
    rule = _rule_for(path, PAGE_RULES)
    assert rule is not None, f"no rule for page {path!r}"
    url = fill(path, world.a)
    data = BODY[path](world.a) if path in BODY else None
    response = _ask(world, role, "GET", url, api=False, data=data)
    expected = _expect(rule, role)
    unsafe = response.request["REQUEST_METHOD"] != "GET"
    api = path == "api/schema/"  # answers like the API: 401, no redirect
    _check(response, expected, rule, api=api, unsafe=unsafe)
    _no_leak(response, world, role)
    if expected in (FORBIDDEN, HIDDEN, REFUSED) and not unsafe:
        fragment = _ask(world, role, "GET", url, api=False, htmx=True)
        _check(fragment, expected, rule, api=False, unsafe=False)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("method", "path"), _operations(), ids=[f"{m} {p}" for m, p in _operations()]
)
def test_api_operation(world, db, method, path, role):
    rule = _rule_for(f"{method} {path}", API_RULES)
    assert rule is not None, f"no rule for {method} {path}"
    key = f"{method} {path}"
    data = API_BODY[key](world.a) if key in API_BODY else None
    response = _ask(world, role, method, fill(path, world.a), api=True, data=data)
    expected = _expect(rule, role)
    _check(response, expected, rule, api=True, unsafe=method != "GET")
    if expected in (HIDDEN, REFUSED) and response.status_code == 400:
        # A body checked before the object: the same answer as for an id that no
        # object has, so it tells nothing about A's object.
        nowhere = _ask(
            world, role, method, _nowhere(path, world.a), api=True, data=data
        )
        assert nowhere.status_code == 400, (path, role, nowhere.status_code)
    _no_leak(response, world, role)


# --- Query parameters that name the other workspace's objects -------------------------
# Pages and API reads take ids in their query string too (an agreement's runs and
# campaigns, a form's dataset, a list's ?workspace=). Naming the other workspace's
# objects there must show nothing of it, and never fail.
CROSS_QUERY = (
    "workspace={workspace}&dataset={dataset}&campaign={campaign}"
    "&campaigns={campaign}&run={run}&runs={run}&run_ids={run}&judge={run}"
    "&reference_run_id={run}&human_reference={campaign}&job={job}"
)


def _cross_query(side, url: str = "") -> str:
    """The query naming `side`'s objects, to append to `url` (which may have one)."""
    o = side.objects
    return ("&" if "?" in url else "?") + CROSS_QUERY.format(
        workspace=side.workspace.pk,
        dataset=o["dataset"].pk,
        campaign=o["campaign"].pk,
        run=o["run"].pk,
        job=o["job"].pk,
    )


def _reads() -> list[tuple[bool, str]]:
    pages = [(False, p) for p in _pages() if p not in ("login/", "logout/")]
    return pages + [(True, p) for m, p in _operations() if m == "GET"]


@pytest.mark.parametrize(("api", "path"), _reads(), ids=[p for _, p in _reads()])
def test_query_naming_the_other_workspace_shows_nothing_of_it(world, db, api, path):
    """A's owner on A's pages with B's ids in the query; B's owner likewise on
    the pages that name no object."""
    url = fill(path, world.a)
    owner_a = _ask(world, OWNER, "GET", url + _cross_query(world.b, url), api=api)
    assert owner_a.status_code < 500
    if owner_a.request["REQUEST_METHOD"] == "GET":
        _marker_free(owner_a, world.b)
    if "<" not in path and "{" not in path:
        other = _ask(world, "other", "GET", "/" + path + _cross_query(world.a), api=api)
        assert other.status_code < 500
        _marker_free(other, world.a)


# --- A path or a body that mixes the two workspaces -----------------------------------


def _mixed(path: str, first, rest) -> str:
    """`path` with its first parameter filled from `first`'s objects, the other ids
    from `rest` (B's campaign with A's response, ...); `rest` None: an id that no
    object has."""
    names = [m.group(1) or m.group(2) for m in PARAM.finditer(path)]
    head = names[0]

    def value(match):
        name = match.group(1) or match.group(2)
        if name == head or not name.endswith("_id"):
            return _value(name, path, first)
        return str(NOWHERE) if rest is None else _value(name, path, rest)

    return "/" + PARAM.sub(value, path)


def _nested() -> list[tuple[bool, str, str]]:
    """Every page and operation whose path names two objects by id."""

    def ids(path):
        return [n for n in PARAM.findall(path) if (n[0] or n[1]).endswith("_id")]

    cases = [(False, "GET", p) for p in _pages() if len(ids(p)) > 1]
    cases += [(True, m, p) for m, p in _operations() if len(ids(p)) > 1]
    return cases


@pytest.mark.parametrize(
    ("api", "method", "path"), _nested(), ids=[f"{m} {p}" for _, m, p in _nested()]
)
def test_own_object_with_the_other_workspaces_object_inside_is_404(
    world, db, api, method, path
):
    """B's owner on B's campaign (dataset, run) naming A's response (rater,
    suggestion): the inner object does not exist for them. A 404, or exactly the
    answer an id that no object has gets (a body checked first, a "not a gold
    item" notice): nothing that tells A's objects apart."""
    response = _ask(world, "other", method, _mixed(path, world.b, world.a), api=api)
    _marker_free(response, world.a)
    if response.status_code == 404:
        return
    nowhere = _ask(world, "other", method, _mixed(path, world.b, None), api=api)
    assert (response.status_code, response.get("Location")) == (
        nowhere.status_code,
        nowhere.get("Location"),
    ), f"{path}: {response.status_code}, an unknown id: {nowhere.status_code}"


def _bodies(world) -> list[tuple[str, str, dict]]:
    """Creations and changes by B's owner whose body names A's objects."""
    a, b = world.a.objects, world.b.objects
    return [
        ("post", "/api/runs/", {"config": a["config"].pk, "dataset": a["dataset"].pk}),
        ("post", "/api/runs/", {"config": b["config"].pk, "dataset": a["dataset"].pk}),
        ("post", "/api/runs/", {"config": a["config"].pk, "dataset": b["dataset"].pk}),
        (
            "post",
            "/api/runs/panel/",
            {
                "dataset": b["dataset"].pk,
                "run_ids": [a["run"].pk, b["run"].pk],
                "method": "mean",
            },
        ),
        (
            "post",
            f"/api/runs/{b['run'].pk}/calibrate/",
            {"campaign_ids": [a["campaign"].pk]},
        ),
        (
            "post",
            "/api/experiments/",
            {"dataset": a["dataset"].pk, "name": "x", "run_ids": [a["run"].pk]},
        ),
        (
            "post",
            "/api/experiments/",
            {"dataset": b["dataset"].pk, "name": "x", "run_ids": [a["run"].pk]},
        ),
        (
            "post",
            "/api/experiments/",
            {
                "dataset": b["dataset"].pk,
                "name": "x",
                "run_ids": [b["run"].pk],
                "campaign_ids": [a["campaign"].pk],
            },
        ),
        (
            "post",
            f"/api/experiments/{b['experiment'].pk}/runs/",
            {"run_id": a["run"].pk},
        ),
        (
            "post",
            f"/api/experiments/{b['experiment'].pk}/baseline/",
            {"run_id": a["run"].pk},
        ),
        ("post", "/api/campaigns/", {"dataset": a["dataset"].pk, "name": "x"}),
        (
            "post",
            "/api/campaigns/",
            {
                "dataset": b["dataset"].pk,
                "name": "x",
                "raters": [world.a.users[RATER].pk],
            },
        ),
        (
            "post",
            "/api/pairwise/campaigns/",
            {"dataset": a["dataset"].pk, "name": "x"},
        ),
        (
            "put",
            f"/api/campaigns/{b['campaign'].pk}/raters/",
            {"raters": [world.a.users[RATER].pk]},
        ),
        (
            "post",
            "/api/campaigns/sampling/",
            {"dataset": b["dataset"].name, "run": a["run"].pk, "budget": 2},
        ),
        (
            "post",
            f"/api/datasets/{b['dataset'].pk}/gold/",
            {"response_id": a["response"].pk, "scores": {SKILL_KEY: 3}},
        ),
        (
            "post",
            "/api/judges/",
            {
                "name": "x",
                "base_url": "http://127.0.0.1:9/v1",
                "model": "m",
                "prompt_id": a["prompt"].pk,
            },
        ),
    ]


def test_bodies_naming_the_other_workspaces_objects_are_refused(world, db):
    """Nothing is made or changed with another workspace's object, and the refusal
    does not name it."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token(world.b.users[OWNER])}")
    failures = []
    for method, url, body in _bodies(world):
        response = getattr(client, method)(url, body, format="json")
        text = _body(response)
        if response.status_code not in (400, 403, 404) or "alpha-" in text:
            failures.append(
                f"{method.upper()} {url} {body}: {response.status_code} {text[:200]}"
            )
    assert not failures, "\n".join(failures)


def _page_forms(world) -> list[tuple[str, dict]]:
    """The creation forms, posted by B's owner with A's objects in them."""
    a, b = world.a.objects, world.b.objects
    return [
        ("/campaigns/new/", {"dataset": a["dataset"].pk, "name": "x", "overlap": 1}),
        ("/pairwise/campaigns/new/", {"dataset": a["dataset"].pk, "name": "x"}),
        (
            "/runs/new/",
            {"config": a["config"].pk, "dataset": a["dataset"].pk, "kind": "pointwise"},
        ),
        (
            "/runs/new/",
            {"config": b["config"].pk, "dataset": a["dataset"].pk, "kind": "pointwise"},
        ),
        (
            "/runs/new/",
            {
                "config": b["config"].pk,
                "dataset": b["dataset"].pk,
                "kind": "pointwise",
                "experiment": a["experiment"].pk,
            },
        ),
        (
            "/runs/panel/new/",
            {
                "dataset": b["dataset"].pk,
                "run_ids": [a["run"].pk, b["run"].pk],
                "method": "mean",
            },
        ),
        ("/runs/panel/new/", {"dataset": a["dataset"].pk, "run_ids": [a["run"].pk]}),
        (
            "/experiments/",
            {"dataset": a["dataset"].pk, "name": "x", "runs": [a["run"].pk]},
        ),
        (
            "/experiments/",
            {"dataset": b["dataset"].pk, "name": "x", "runs": [a["run"].pk]},
        ),
        (
            "/campaigns/sampling/new/",
            {"dataset": a["dataset"].pk, "run": a["run"].pk, "budget": 2},
        ),
        (
            "/campaigns/sampling/new/",
            {"dataset": b["dataset"].pk, "run": a["run"].pk, "budget": 2},
        ),
    ]


def test_forms_naming_the_other_workspaces_objects_are_refused(world, db):
    """Nothing is made (no redirect to a new object, no new run) and the refusal
    does not name A's objects."""
    from judging.models import JudgeRun

    client = Client()
    client.force_login(world.b.users[OWNER])
    runs_before = JudgeRun.objects.count()
    failures = []
    for url, data in _page_forms(world):
        response = client.post(url, data)
        text = _body(response)
        if response.status_code not in (200, 400, 403, 404) or "alpha-" in text:
            failures.append(f"POST {url} {data}: {response.status_code} {text[:200]}")
    assert not failures, "\n".join(failures)
    assert JudgeRun.objects.count() == runs_before


def test_an_endpoint_with_no_rule_fails_the_matrix(monkeypatch):
    """The guard above can fail: a path or an operation nobody wrote a rule for."""
    paths = [*INVENTORY["url_paths"], "brand-new/<int:thing_id>/"]
    monkeypatch.setitem(INVENTORY, "url_paths", paths)
    with pytest.raises(AssertionError, match="brand-new"):
        test_every_endpoint_has_a_rule()
    monkeypatch.setitem(INVENTORY, "url_paths", INVENTORY["url_paths"][:-1])
    operations = [*INVENTORY["api_operations"], "POST /api/brand-new/ brand_new_create"]
    monkeypatch.setitem(INVENTORY, "api_operations", operations)
    with pytest.raises(AssertionError, match="POST api/brand-new/"):
        test_every_endpoint_has_a_rule()
