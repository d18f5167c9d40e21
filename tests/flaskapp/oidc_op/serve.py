"""Run the test OpenID Connect provider: ``python -m tests.flaskapp.oidc_op.serve``
with a JSON description on stdin (port, client, users); it sets up its database, a
signing key, the client and the users, prints ``READY`` and serves until killed."""

import json
import os
import sys
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args):  # the tests read stdout for READY only
        pass


class _Threading(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def main() -> None:
    spec = json.loads(sys.stdin.readline())
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.flaskapp.oidc_op.settings"
    os.environ["OIDC_OP_DB"] = spec["db"]
    os.environ["OIDC_OP_SITE_URL"] = f"http://127.0.0.1:{spec['port']}"
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from oidc_provider.models import Client, ResponseType

    call_command("migrate", verbosity=0)
    call_command("creatersakey", stdout=open(os.devnull, "w"))
    client = Client.objects.create(
        name="FLASK Eval",
        client_type="confidential",
        client_id=spec["client_id"],
        client_secret=spec["client_secret"],
        jwt_alg="RS256",
        require_consent=False,
        reuse_consent=True,
    )
    client.redirect_uris = spec["redirect_uris"]
    client.post_logout_redirect_uris = spec["post_logout_redirect_uris"]
    client.save()
    client.response_types.add(ResponseType.objects.get(value="code"))
    for person in spec["users"]:
        user = User.objects.create_user(
            person["username"],
            email=person["email"],
            password=person["password"],
            first_name=person.get("first_name", ""),
        )
        for name in person.get("groups", []):
            user.groups.add(Group.objects.get_or_create(name=name)[0])

    server = make_server(
        "127.0.0.1",
        spec["port"],
        get_wsgi_application(),
        server_class=_Threading,
        handler_class=_Quiet,
    )
    print("READY", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
