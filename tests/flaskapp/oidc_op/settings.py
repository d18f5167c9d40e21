"""A tiny OpenID Connect provider (django-oidc-provider) that the single sign-on tests
start as a subprocess (`serve.py`): a real provider speaking HTTP, with its own SQLite
database, users, groups and signing key. Never part of the product."""

import os

SECRET_KEY = "test-provider-only-" + "x" * 40
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oidc_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.flaskapp.oidc_op.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [os.path.join(os.path.dirname(__file__), "templates")],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ]
        },
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ["OIDC_OP_DB"],
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
USE_TZ = True
LOGIN_URL = "/accounts/login/"
SITE_URL = os.environ["OIDC_OP_SITE_URL"]
OIDC_USERINFO = "tests.flaskapp.oidc_op.claims.userinfo"
OIDC_EXTRA_SCOPE_CLAIMS = "tests.flaskapp.oidc_op.claims.GroupsClaims"
OIDC_IDTOKEN_SUB_GENERATOR = "tests.flaskapp.oidc_op.claims.subject"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Its own cookie names: a browser test keeps the provider's and the app's cookies apart
# even where both live on one host name.
SESSION_COOKIE_NAME = "op_sessionid"
CSRF_COOKIE_NAME = "op_csrftoken"
