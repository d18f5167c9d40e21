"""What error reports may show: `RedactingExceptionReporterFilter`, the project's
DEFAULT_EXCEPTION_REPORTER_FILTER.

Django's debug page (DEBUG=1) and its error e-mails list every setting, the request's
META (under runserver and gunicorn that includes the whole process environment) and
each frame's local variables. Django hides settings and META keys whose names look
secret (API, AUTH, TOKEN, KEY, SECRET, PASS, SIGNATURE), so `JUDGE_KEY_*`,
`DJANGO_SECRET_KEY` and `DATABASES[...]["PASSWORD"]` are starred already; but the
values of DATABASE_URL, REDIS_URL and CELERY_BROKER_URL (and CACHES' LOCATION) carry
the password inside the URL under an innocent name. This filter also:

- replaces the password of any URL with credentials (`scheme://user:PASSWORD@host`)
  and the value of a secret-looking query parameter (`?password=`, `&token=`, ...)
  in every string it shows: settings (however nested), META, cookies and frame
  variables;
- stars frame variables whose names say they hold a secret (`password`,
  `api_key`, `secret`, `token`, ...);
- applies `sensitive_variables` / `sensitive_post_parameters` also under DEBUG
  (Django skips them there), so the login form's password never shows either.

The URL's user, host and path stay visible: they are what a developer needs.
"""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter

# scheme://user:password@  (the user may be empty: redis://:password@host)
_URL_PASSWORD = re.compile(
    r"(?P<head>[a-z][a-z0-9+.\-]*://[^:/?#@\s]*:)[^@\s/]+@", re.I
)
_SECRET_WORDS = r"pass|pwd|secret|token|key|auth|credential|signature"
_QUERY_SECRET = re.compile(
    rf"(?P<head>[?&;][^=&#\s]*(?:{_SECRET_WORDS})[^=&#\s]*=)[^&#\s]+", re.I
)
_SECRET_VARIABLE = re.compile(
    r"pass|pwd|secret|token|api_?key|private_?key|credential|signature", re.I
)


def redact_text(text: str, substitute: str) -> str:
    """`text` with URL passwords and secret query parameter values replaced."""
    if "://" not in text and "=" not in text:
        return text
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{substitute}@", text)
    return _QUERY_SECRET.sub(lambda m: f"{m['head']}{substitute}", text)


class RedactingExceptionReporterFilter(SafeExceptionReporterFilter):
    def is_active(self, request) -> bool:
        """Always on: the debug page must not show marked secrets either."""
        return True

    def cleanse_setting(self, key, value):
        if isinstance(value, str):
            value = redact_text(value, self.cleansed_substitute)
        return super().cleanse_setting(key, value)

    def get_traceback_frame_variables(self, request, tb_frame):
        cleansed = []
        for name, value in super().get_traceback_frame_variables(request, tb_frame):
            if isinstance(name, str) and _SECRET_VARIABLE.search(name):
                value = self.cleansed_substitute
            elif isinstance(value, str | dict | list | tuple):
                value = self.cleanse_setting("", value)
            cleansed.append((name, value))
        return cleansed
