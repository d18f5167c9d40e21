from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from analysis.views import home as home_views
from flaskapp import accounts, audit
from flaskapp import views as flaskapp_views
from flaskapp.sso import views as sso_views

urlpatterns = [
    path("", home_views.home, name="home"),
    # Django's login and logout, with single sign-on's button and provider logout.
    path("login/", sso_views.LoginView.as_view(), name="login"),
    path("logout/", sso_views.LogoutView.as_view(), name="logout"),
    path("sso/", include("flaskapp.sso.urls")),
    path(
        "account/password/",
        accounts.PasswordChangeView.as_view(),
        name="password-change",
    ),
    path("django-admin/", admin.site.urls),
    path(
        "workspaces/<int:workspace_id>/audit/",
        audit.workspace_audit,
        name="workspace-audit",
    ),
    path(
        "workspaces/switch/", flaskapp_views.workspace_switch, name="workspace-switch"
    ),
    # one pages include and one API include per app
    path("", include("annotation.urls")),
    path("", include("judging.urls")),
    path("", include("analysis.urls")),
    path("", include("flaskapp.people.urls")),
    path("api/auth/token/", accounts.TokenApi.as_view(), name="api-token"),
    path("api/auth/tokens/", accounts.TokenListApi.as_view(), name="api-tokens"),
    path("api/audit/", audit.AuditEventListApi.as_view(), name="api-audit"),
    path("api/", include("annotation.api.urls")),
    path("api/", include("judging.api.urls")),
    path("api/", include("analysis.api.urls")),
    path("api/", include("flaskapp.people.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script from this same URL
    # (`?script`), so the page needs no inline script under the CSP.
    # A page: anonymous visitors are sent to the login, as on every other page (the
    # schema itself answers 401/403 like the rest of the API: SERVE_PERMISSIONS).
    path(
        "api/docs/",
        login_required(SpectacularSwaggerSplitView.as_view(url_name="api-schema")),
        name="api-docs",
    ),
]

# A database outage raised outside a view is a 503 too (flaskapp.middleware).
handler500 = "flaskapp.middleware.server_error"
