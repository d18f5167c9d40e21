"""Settings, driven by the environment (see README "Configuration" and "Security").

With no environment but `FLASK_DEV=1` the app runs offline on an embedded SQLite
database and an embedded (filesystem) Celery broker, which is what `make run` relies
on. Without `DJANGO_SECRET_KEY` and without `FLASK_DEV=1` the settings refuse to load
(`flaskapp.secret_key`). A variable with a value it cannot take (`DJANGO_HTTPS=maybe`)
is an `ImproperlyConfigured` error naming it.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from flaskapp.secret_key import env_flag, secret_key_load
from flaskapp.sso.config import role_map_parse

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("FLASK_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    """1/true/yes/on or 0/false/no/off (any case); unset or empty: `default`."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be 1 or 0 (true/false), not {value!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} must be a whole number, not {value!r}"
        ) from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {number}")
    return number


DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY, SECRET_KEY_SOURCE = secret_key_load(environ=os.environ, var_dir=VAR_DIR)
ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get(
        "DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver"
    ).split(",")
    if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip()
    for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",")
    if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "knox",
    "axes",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "csp",
    "simple_history",
    "flaskapp",
    "annotation",
    "judging",
    "analysis",
    "demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A password someone else set must be replaced first (flaskapp.middleware).
    "flaskapp.middleware.TemporaryPasswordMiddleware",
    # A single sign-on session goes back to the provider every
    # OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS, so roles follow its claims (flaskapp.sso).
    "flaskapp.sso.middleware.SsoRefreshMiddleware",
    # A single sign-on user whom no claim gives a workspace sees only that page.
    "flaskapp.sso.middleware.NoWorkspaceMiddleware",
    # The logout form may go on to the provider's end-session endpoint (its CSP).
    "flaskapp.sso.middleware.ProviderLogoutCspMiddleware",
    # Bad input and database outages answer 400 / 503, never 500 (flaskapp.middleware).
    "flaskapp.middleware.BadInputMiddleware",
    "flaskapp.middleware.DatabaseOutageMiddleware",
    # Last: answers a locked-out login (flaskapp.accounts.lockout_response).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "flaskapp.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotation.context_processors.roles_context",
                "flaskapp.context_processors.workspace_context",
            ],
            # Money and counts, formatted one way on every page (flaskapp/numbers.py).
            "builtins": ["flaskapp.templatetags.numbers"],
        },
    },
]

WSGI_APPLICATION = "flaskapp.wsgi.application"

# --- Database -------------------------------------------------------------------------
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'db.sqlite3'}",
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL + a busy timeout let the web server and the embedded worker share the file.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's standard validators (applied by the admin's user forms, `changepassword`,
# `createsuperuser` and the password change page): not like the user's name or email,
# at least 10 characters, not a common password, not all digits.
_VALIDATION = "django.contrib.auth.password_validation"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"{_VALIDATION}.UserAttributeSimilarityValidator"},
    {"NAME": f"{_VALIDATION}.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": f"{_VALIDATION}.CommonPasswordValidator"},
    {"NAME": f"{_VALIDATION}.NumericPasswordValidator"},
]
LOGIN_URL = "login"

# --- Logins (flaskapp/accounts.py, README "Logins and tokens") ---------------------------
# django-axes counts failed logins on every way in (login page, admin, token POST);
# after LOGIN_FAILURE_LIMIT failures the (username, address) pair is locked out for
# LOGIN_LOCKOUT_MINUTES. LOGIN_LOCKOUT_BY=username locks the username from every
# address instead (stronger against distributed guessing; lets anyone lock an account).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    # OpenID Connect (settings "Single sign-on"); answers nothing while SSO is off.
    "flaskapp.sso.backend.OidcBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
_LOCKOUT_BY = os.environ.get("LOGIN_LOCKOUT_BY", "username+address").strip()
if _LOCKOUT_BY not in {"username+address", "username"}:
    raise ImproperlyConfigured(
        f"LOGIN_LOCKOUT_BY must be username+address or username, not {_LOCKOUT_BY!r}"
    )
AXES_LOCKOUT_PARAMETERS = (
    [["username", "ip_address"]] if _LOCKOUT_BY == "username+address" else ["username"]
)
AXES_RESET_ON_SUCCESS = True
# Behind N reverse proxies that append to X-Forwarded-For, the client's address is the
# N-th entry from the right (flaskapp.accounts.client_address); 0: REMOTE_ADDR.
LOGIN_PROXY_COUNT = env_int("LOGIN_PROXY_COUNT", 0, minimum=0)
AXES_CLIENT_IP_CALLABLE = "flaskapp.accounts.client_address"
AXES_LOCKOUT_CALLABLE = "flaskapp.accounts.lockout_response"
AXES_HTTP_RESPONSE_CODE = 429
# API tokens (flaskapp/tokens.py): hashed (SHA-512), valid for API_TOKEN_TTL_DAYS.
API_TOKEN_TTL_DAYS = env_int("API_TOKEN_TTL_DAYS", 30, minimum=1)
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=API_TOKEN_TTL_DAYS),
    "AUTO_REFRESH": False,
    "AUTH_HEADER_PREFIX": "Token",
}
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Single sign-on (flaskapp/sso, README "Single sign-on") ------------------------------
# OpenID Connect login (mozilla-django-oidc), on when OIDC_RP_CLIENT_ID is set; then the
# provider's issuer and endpoints are required. Off: no button, and the sso/ URLs are
# 404s. Local accounts keep working either way. The variable names are the library's
# setting names.
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_RP_CLIENT_ID", "").strip()
SSO_ENABLED = bool(OIDC_RP_CLIENT_ID)
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_RP_CLIENT_SECRET", "").strip()
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_RP_SIGN_ALGO", "").strip() or "RS256"
# The ID token's `iss` must equal OIDC_OP_ISSUER exactly.
OIDC_OP_ISSUER = os.environ.get("OIDC_OP_ISSUER", "").strip()
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get(
    "OIDC_OP_AUTHORIZATION_ENDPOINT", ""
).strip()
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_OP_TOKEN_ENDPOINT", "").strip()
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_OP_USER_ENDPOINT", "").strip()
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_OP_JWKS_ENDPOINT", "").strip() or None
# Optional: with it, logging out also ends the session at the provider.
OIDC_OP_END_SESSION_ENDPOINT = os.environ.get(
    "OIDC_OP_END_SESSION_ENDPOINT", ""
).strip()
if SSO_ENABLED:
    _needed = [
        name
        for name, value in (
            ("OIDC_RP_CLIENT_SECRET", OIDC_RP_CLIENT_SECRET),
            ("OIDC_OP_ISSUER", OIDC_OP_ISSUER),
            ("OIDC_OP_AUTHORIZATION_ENDPOINT", OIDC_OP_AUTHORIZATION_ENDPOINT),
            ("OIDC_OP_TOKEN_ENDPOINT", OIDC_OP_TOKEN_ENDPOINT),
            ("OIDC_OP_USER_ENDPOINT", OIDC_OP_USER_ENDPOINT),
            # HS256 tokens are checked with the client secret, RS/ES with the keys
            (
                "OIDC_OP_JWKS_ENDPOINT",
                OIDC_OP_JWKS_ENDPOINT or OIDC_RP_SIGN_ALGO[:2] == "HS",
            ),
        )
        if not value
    ]
    if _needed:
        raise ImproperlyConfigured(
            "OIDC_RP_CLIENT_ID is set, so single sign-on is on, and it also needs "
            + ", ".join(_needed)
        )
# The button reads "Sign in with <OIDC_PROVIDER_NAME>".
OIDC_PROVIDER_NAME = (
    os.environ.get("OIDC_PROVIDER_NAME", "").strip() or "single sign-on"
)
OIDC_RP_SCOPES = os.environ.get("OIDC_RP_SCOPES", "").strip() or "openid email profile"
# The claim (ID token or userinfo) holding the user's groups, and the claim giving the
# new local account its username (falling back to the e-mail's local part, then `sub`).
OIDC_GROUPS_CLAIM = os.environ.get("OIDC_GROUPS_CLAIM", "").strip() or "groups"
OIDC_USERNAME_CLAIM = (
    os.environ.get("OIDC_USERNAME_CLAIM", "").strip() or "preferred_username"
)
# "claim value=workspace-slug:role,...", e.g. "lab-a-admins=lab-a:owner,lab-a=lab-a:
# researcher" (flaskapp.sso.config.role_map_parse checks it at start-up). The provider
# decides the roles in the workspaces this names; the others are left to their owners.
OIDC_ROLE_MAP = os.environ.get("OIDC_ROLE_MAP", "").strip()
role_map_parse(OIDC_ROLE_MAP)
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT", 10, minimum=1)
# PKCE on the code exchange (RFC 7636), nonce and state: the library's defaults plus PKCE.
OIDC_USE_PKCE = env_bool("OIDC_USE_PKCE", True)
# The ID token is kept in the (server-side) session for the provider's logout hint.
OIDC_STORE_ID_TOKEN = True
OIDC_AUTHENTICATION_CALLBACK_URL = "sso-callback"
# Roles follow the provider: a signed-in single sign-on user is sent back to it (with
# prompt=none, silent while its session lasts) when this many seconds have passed
# since it last vouched for them, and its claims are applied again
# (flaskapp.sso.middleware.SsoRefreshMiddleware).
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = env_int(
    "OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS", 900, minimum=30
)
# A single sign-on user makes API tokens on sso/token/ when the provider vouched for
# them within this many minutes (they have no password for POST /api/auth/token/).
SSO_TOKEN_SIGN_IN_MINUTES = env_int("SSO_TOKEN_SIGN_IN_MINUTES", 10, minimum=1)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
# WhiteNoise warns on every request when the folder is missing (before collectstatic).
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_ROOT = VAR_DIR / "media"
# On a development machine (FLASK_DEV=1: `make run`, `make test`) WhiteNoise serves
# static files straight from the apps' and static/ folders, so `make run` needs no
# collectstatic (a few seconds of a fresh clone's first start). Deployments collect
# them (the Dockerfile does) and serve STATIC_ROOT.
WHITENOISE_USE_FINDERS = env_bool("FLASK_DEV", False)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Uploads: files above this size are refused with a message naming the limit.
IMPORT_MAX_BYTES = env_int("IMPORT_MAX_BYTES", 200 * 1024 * 1024)
# A gzip file may decompress to at most this much (annotation/importers/formats.py).
IMPORT_MAX_DECOMPRESSED_BYTES = env_int(
    "IMPORT_MAX_DECOMPRESSED_BYTES", 2 * 1024 * 1024 * 1024, minimum=1
)
# ... and to at most this many times its compressed size (at least 1 MiB): real data
# compresses 3-20x, a bomb of newlines or repeated cells 1,000x and more.
IMPORT_MAX_DECOMPRESSION_RATIO = env_int(
    "IMPORT_MAX_DECOMPRESSION_RATIO", 100, minimum=1
)
# The largest text field (instruction, response, reference, rationale, ...) an import
# accepts, in bytes of UTF-8; a longer one is refused naming its line and field.
IMPORT_MAX_FIELD_BYTES = env_int("IMPORT_MAX_FIELD_BYTES", 1_000_000, minimum=1)
# Imports with more rows than this run as a background job; smaller ones finish inline.
IMPORT_INLINE_MAX_ROWS = env_int("IMPORT_INLINE_MAX_ROWS", 5000)
# Expiry of files kept between steps (`manage.py expire_files`, and hourly by beat):
# a staged upload, and the preview of an import never confirmed, after this many
# hours; a background job's result file (analysis.models.Job) this many days after
# the job finished. Confirmed imports and live jobs are never touched.
UPLOAD_STAGED_EXPIRY_HOURS = env_int("UPLOAD_STAGED_EXPIRY_HOURS", 24, minimum=1)
JOB_FILE_EXPIRY_DAYS = env_int("JOB_FILE_EXPIRY_DAYS", 7, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# --- REST API -------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "knox.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "flaskapp.api.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "flaskapp.api.Pagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "flaskapp.api.exception_handler",
    # Per-user throttling (flaskapp/throttling.py), counted in the default cache
    # (CACHES below: Redis with REDIS_URL, shared by every web worker; else files).
    # `user`: every API request, far above a rater's 10 requests/s; `heavy`: the
    # endpoints and pages that compute statistics, fit models or start jobs.
    "DEFAULT_THROTTLE_CLASSES": ["flaskapp.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "user": os.environ.get("THROTTLE_USER_RATE", "6000/min"),
        "heavy": os.environ.get("THROTTLE_HEAVY_RATE", "30/min"),
    },
}
# At most this many heavy requests of one user, and of all users together, at a time
# (0: no limit); more are a 429 with Retry-After, whatever the rate
# (flaskapp/throttling.py). The total keeps web threads for the raters.
HEAVY_IN_FLIGHT_PER_USER = env_int("HEAVY_IN_FLIGHT_PER_USER", 2, minimum=0)
HEAVY_IN_FLIGHT_TOTAL = env_int("HEAVY_IN_FLIGHT_TOTAL", 2, minimum=0)
SPECTACULAR_SETTINGS = {
    "TITLE": "FLASK Eval API",
    "DESCRIPTION": "Human raters and LLM judges scoring the same responses, skill by skill.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and the docs are for signed-in users, like every page but the login:
    # they list every operation and field (README, "Roles and what each may do").
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    # Several `format` parameters take different choice sets: name this one.
    "ENUM_NAME_OVERRIDES": {"CsvJsonlFormatEnum": ["csv", "jsonl"]},
    # Swagger UI from the bundled sidecar package: /api/docs/ works offline (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No validator badge: it would load an image from validator.swagger.io (refused
    # by the Content Security Policy) and send it the schema's URL.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
}

# --- Rating ----------------------------------------------------------------------------
# On PostgreSQL the rater loop's serve and submit run as prepared hand-written SQL
# (annotation.services.serving_sql); False falls back to the ORM path everywhere. The
# prepared statements need session-level connections: turn this off behind a
# transaction-mode pooler such as pgbouncer.
RATING_FAST_SQL = env_bool("RATING_FAST_SQL", True)
# The score export's CSV written by PostgreSQL (analysis.exports.scores_sql); False
# runs the Python encoder, which gives the same bytes, slower.
EXPORT_FAST_SQL = env_bool("EXPORT_FAST_SQL", True)

# --- Heavy work (issue 34) --------------------------------------------------------------
# The most bootstrap work one web request may do: n_boot x cells, the cells being the
# scores a statistic resamples (analysis.selectors.budget): about 2 s of CPU. Above it
# an n_boot asked for is a 400 naming `n_boot` and the largest allowed for that
# selection, and the default n_boot (1,000) shrinks to it; the command line and the
# report's background job have no such limit.
BOOT_BUDGET = env_int("BOOT_BUDGET", 50_000_000, minimum=1)
# Background jobs (analysis.models.Job): a user may have this many queued or running
# at once (more: a 429); a job running longer than the task time limit fails.
JOBS_ACTIVE_PER_USER = env_int("JOBS_ACTIVE_PER_USER", 3, minimum=1)
# Rater models of a campaign with more human scores than this are fitted by a job;
# smaller ones inline (they take well under a second).
RATER_MODELS_INLINE_SCORES = env_int("RATER_MODELS_INLINE_SCORES", 20_000, minimum=0)
# An agreement table not in the cache whose selection reads more scores than this
# (analysis.selectors.budget.agreement_inline) is computed by a job; smaller ones
# inline (50,000 scores: about 1 s on 2 cores, loading and bootstrap together).
AGREEMENT_INLINE_SCORES = env_int("AGREEMENT_INLINE_SCORES", 50_000, minimum=0)

# --- Cache (agreement results; keys carry a fingerprint of their inputs) -------------
if REDIS_URL := os.environ.get("REDIS_URL", ""):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            # The test suite gives each run its own prefix (tests/conftest.py): a
            # cache kept in Redis outlives the test database it was computed from.
            "KEY_PREFIX": os.environ.get("FLASK_CACHE_KEY_PREFIX") or "flaskeval",
            "TIMEOUT": 24 * 3600,
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
            "TIMEOUT": 24 * 3600,
            "OPTIONS": {"MAX_ENTRIES": 1000},
        }
    }

# --- Celery ---------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "filesystem://"
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "broker"
    for _sub in ("queue", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        # kombu's default is ./control, which would litter the working directory
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
else:
    # Must exceed every task's time_limit, or Redis redelivers a task still running.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 4 * 3600}
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = 3000
CELERY_TASK_TIME_LIMIT = 3600
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Judge runs: one driver task per worker process is enough to saturate an endpoint
# (each keeps up to the config's concurrency in flight on an event loop).
JUDGE_DRIVERS_PER_RUN = env_int("JUDGE_DRIVERS_PER_RUN", 2)
# A running call whose lease is older than this (and than 3x its timeout) is presumed
# lost with its worker and goes back to pending.
JUDGE_MIN_LEASE_SECONDS = env_int("JUDGE_MIN_LEASE_SECONDS", 120)
# Crash recovery without beat (judging.services.execution.store.judge_runs_recover):
# every driver renews its heartbeat row every BEAT seconds; one older than STALE seconds
# is a dead driver whose claims go back to pending at once; every worker process checks
# for dead drivers every RECOVER seconds (and `judge --wait` does while it waits).
JUDGE_DRIVER_BEAT_SECONDS = float(os.environ.get("JUDGE_DRIVER_BEAT_SECONDS", "2"))
JUDGE_DRIVER_STALE_SECONDS = float(os.environ.get("JUDGE_DRIVER_STALE_SECONDS", "10"))
JUDGE_RECOVER_SECONDS = float(os.environ.get("JUDGE_RECOVER_SECONDS", "2"))
# Hung calls (judging.deadlines): an attempt waiting longer than FACTOR x the QUANTILE of
# the run's recent latencies (at least FLOOR s, learnt after MIN_SAMPLES answers) is cut
# and retried. JUDGE_HANG_FACTOR=0 turns this off (only the call timeout applies).
JUDGE_HANG_QUANTILE = float(os.environ.get("JUDGE_HANG_QUANTILE", "0.99"))
JUDGE_HANG_FACTOR = float(os.environ.get("JUDGE_HANG_FACTOR", "4"))
JUDGE_HANG_FLOOR_SECONDS = float(os.environ.get("JUDGE_HANG_FLOOR_SECONDS", "2"))
JUDGE_HANG_MIN_SAMPLES = env_int("JUDGE_HANG_MIN_SAMPLES", 20)
JUDGE_MAX_TRANSPORT_RETRIES = env_int("JUDGE_MAX_TRANSPORT_RETRIES", 6)
JUDGE_BACKOFF_BASE_SECONDS = float(os.environ.get("JUDGE_BACKOFF_BASE_SECONDS", "0.5"))
JUDGE_BACKOFF_MAX_SECONDS = float(os.environ.get("JUDGE_BACKOFF_MAX_SECONDS", "30"))
# Batch API runs (judging.services.execution.batch): the limits of one input file
# (OpenAI's: 50,000 lines, 200 MB) and the polling backoff of a submitted batch.
JUDGE_BATCH_MAX_LINES = env_int("JUDGE_BATCH_MAX_LINES", 50_000)
JUDGE_BATCH_MAX_BYTES = env_int("JUDGE_BATCH_MAX_BYTES", 200 * 1024 * 1024)
# The lines of one batch the driver makes (at most JUDGE_BATCH_MAX_LINES): smaller than
# the provider's limit, so the first batch is submitted within seconds and the
# provider works on it while the next ones are written, and each batch's results are
# stored as soon as it completes while the others are still in flight.
JUDGE_BATCH_LINES = env_int("JUDGE_BATCH_LINES", 5_000)
JUDGE_BATCH_POLL_MIN_SECONDS = float(
    os.environ.get("JUDGE_BATCH_POLL_MIN_SECONDS", "1")
)
JUDGE_BATCH_POLL_MAX_SECONDS = float(
    os.environ.get("JUDGE_BATCH_POLL_MAX_SECONDS", "10")
)
# Judge endpoints (judging/endpoints.py): the only environment variables a judge config
# may name as its API key, and the hosts a worker may send judge requests to. Names and
# host names may be glob patterns; an empty host list allows any host (local use).
JUDGE_KEY_ENV_ALLOWED = [
    p.strip()
    for p in os.environ.get(
        "JUDGE_KEY_ENV_ALLOWED", "JUDGE_KEY_*,OPENAI_API_KEY"
    ).split(",")
    if p.strip()
]
JUDGE_ALLOWED_HOSTS = [
    h.strip().lower()
    for h in os.environ.get("JUDGE_ALLOWED_HOSTS", "").split(",")
    if h.strip()
]
# Ports refused to judges on any host unless JUDGE_ALLOWED_HOSTS names host:port;
# unset or empty: judging.endpoints.DEFAULT_BLOCKED_PORTS (the app's PORT is added).
JUDGE_BLOCKED_PORTS = os.environ.get("JUDGE_BLOCKED_PORTS") or None
# Judge API keys stored per workspace are encrypted at rest (flaskapp/vault.py) with
# these Fernet keys, newest first: the first encrypts, every one decrypts, and
# `manage.py rotate_stored_keys` re-encrypts every stored key with the first. Unset in
# production: keys cannot be stored (the env-var keys of JudgeConfig still work). With
# FLASK_DEV=1 and none set, a random one is kept in <FLASK_VAR_DIR>/dev-key-encryption-key.
KEY_ENCRYPTION_KEYS = [
    k.strip()
    for k in os.environ.get("FLASK_KEY_ENCRYPTION_KEYS", "").split(",")
    if k.strip()
]
KEY_ENCRYPTION_DEV_FILE = (
    str(VAR_DIR / "dev-key-encryption-key") if env_flag(os.environ, "FLASK_DEV") else ""
)
# Notifications of finished work (flaskapp.notifications, issue 37). E-mail goes
# through Django's mail: EMAIL_BACKEND and the EMAIL_* variables of the environment
# (the console in development; pytest-django swaps in the in-memory outbox).
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or (
    "django.core.mail.backends.console.EmailBackend"
    if env_flag(os.environ, "FLASK_DEV")
    else "django.core.mail.backends.smtp.EmailBackend"
)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "flask-eval@localhost")
# A workspace's webhook may not point at a private, loopback, link-local or reserved
# address (the server's own network) unless this is on: for a receiver on the same
# machine in development, and for the tests' local receiver.
NOTIFY_WEBHOOK_ALLOW_PRIVATE = env_bool("FLASK_WEBHOOK_ALLOW_PRIVATE", False)
# Attempts per event (the first and its retries, waiting base * 4**n seconds, with
# jitter) and the timeout of each.
NOTIFY_WEBHOOK_MAX_ATTEMPTS = int(os.environ.get("FLASK_WEBHOOK_MAX_ATTEMPTS", "5"))
NOTIFY_WEBHOOK_BACKOFF_SECONDS = float(
    os.environ.get("FLASK_WEBHOOK_BACKOFF_SECONDS", "15")
)
NOTIFY_WEBHOOK_TIMEOUT_SECONDS = 10.0
CELERY_TASK_ROUTES = {"judging.tasks.judge_run_drive_task": {"queue": "judge"}}
CELERY_BEAT_SCHEDULE = {
    "recover-judge-runs": {
        "task": "judging.tasks.judge_runs_recover_task",
        "schedule": 30.0,
    },
    # Serving also expires stale locks; this returns them even when nobody asks for work,
    # so the campaign page's "locked" count stays true.
    "expire-rating-locks": {
        "task": "annotation.tasks.assignments_expire_task",
        "schedule": 60.0,
    },
    # Staged uploads and unconfirmed import previews past UPLOAD_STAGED_EXPIRY_HOURS,
    # job result files past JOB_FILE_EXPIRY_DAYS (`manage.py expire_files` by hand).
    "expire-staged-uploads": {
        "task": "annotation.tasks.uploads_expire_task",
        "schedule": 3600.0,
    },
    "expire-job-files": {
        "task": "analysis.tasks.job_files_expire_task",
        "schedule": 3600.0,
    },
}

# --- Logging --------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    },
    # A 403 logs its one line without the traceback (flaskapp/logs.py).
    "filters": {
        "forbidden_one_line": {"()": "flaskapp.logs.ForbiddenWithoutTraceback"}
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["forbidden_one_line"],
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# --- Security (README "Security") ------------------------------------------------------
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# The debug page (DEBUG=1) and error reports show settings and the environment with
# secrets and the passwords inside URLs redacted.
DEFAULT_EXCEPTION_REPORTER_FILTER = "flaskapp.security.RedactingExceptionReporterFilter"


def _proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """`X-Forwarded-Proto: https` (or `=`, or Django's `HTTP_X_FORWARDED_PROTO,https`)
    -> ("HTTP_X_FORWARDED_PROTO", "https"); empty -> None."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    for separator in (":", "=", ","):
        header, found, value = raw.partition(separator)
        if found:
            break
    header, value = header.strip(), value.strip()
    if not (found and header and value):
        raise ImproperlyConfigured(
            f"{name} must look like 'X-Forwarded-Proto: https', not {raw!r}"
        )
    header = header.upper().replace("-", "_")
    return (header if header.startswith("HTTP_") else f"HTTP_{header}", value)


# Served over HTTPS (directly or behind a proxy that terminates TLS): DJANGO_HTTPS=1
# turns on the redirect, secure cookies and a year of HSTS; each can be set alone.
HTTPS = env_bool("DJANGO_HTTPS", False)
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", HTTPS)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", HTTPS)
SECURE_HSTS_SECONDS = env_int(
    "DJANGO_SECURE_HSTS_SECONDS", 365 * 24 * 3600 if HTTPS else 0, minimum=0
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool(
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", False
)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
# Only behind a proxy that sets this header on every request (and drops a client's).
SECURE_PROXY_SSL_HEADER = _proxy_ssl_header("DJANGO_SECURE_PROXY_SSL_HEADER")

# Content Security Policy (django-csp): scripts and styles from our own static files
# only; no inline <script>, no inline event handlers, no eval (htmx is configured
# without it in base.html), no inline <style> elements. Inline style="" attributes
# stay allowed (style-src-attr), because templates set progress bar widths with them.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "style-src-attr": [UNSAFE_INLINE],
        # data: for the icons inside Swagger UI's stylesheet (/api/docs/)
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
        "upgrade-insecure-requests": HTTPS,
    },
}
