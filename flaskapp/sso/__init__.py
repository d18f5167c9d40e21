"""Single sign-on with OpenID Connect (issue 35), through mozilla-django-oidc.

On when ``OIDC_RP_CLIENT_ID`` is set (settings, "Single sign-on"; README "Single
sign-on"). The way in:

1. The login page shows "Sign in with <OIDC_PROVIDER_NAME>", a link to ``sso/login/``
   (`views.sso_login`), which sends the browser to the provider with a fresh state,
   nonce and PKCE challenge.
2. The provider sends it back to ``sso/callback/`` (`views.sso_callback`): the code is
   exchanged for tokens over the back channel, the ID token's signature (the
   provider's published keys), issuer, audience, expiry and nonce are checked
   (`backend.OidcBackend`), and `services.sso_login` creates or updates the local
   account (found by the provider's (issuer, sub), never by e-mail) and sets its
   workspace memberships from the groups claim through ``OIDC_ROLE_MAP``, each change
   audited. Anything wrong is a page saying what, with no session.
3. A user whom no claim gives a workspace is logged in but sees only
   ``sso/no-workspace/`` (`middleware.NoWorkspaceMiddleware`).
4. ``logout/`` (`views.LogoutView`) ends the local session and, when the provider has
   an end-session endpoint, sends the browser there to end the provider's too.

Off, the button is absent and every ``sso/`` URL is a 404. Local accounts work either
way. The client secret and the tokens never reach a page, a log or an error message.
"""
