from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation.views import datasets as annotation_views
from flaskapp import accounts
from flaskapp import views as flaskapp_views

urlpatterns = [
    path("", annotation_views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "account/password/",
        accounts.PasswordChangeView.as_view(),
        name="password-change",
    ),
    path("django-admin/", admin.site.urls),
    path(
        "workspaces/switch/", flaskapp_views.workspace_switch, name="workspace-switch"
    ),
    # one pages include and one API include per app
    path("", include("annotation.urls")),
    path("", include("judging.urls")),
    path("", include("analysis.urls")),
    path("api/auth/token/", accounts.TokenApi.as_view(), name="api-token"),
    path("api/auth/tokens/", accounts.TokenListApi.as_view(), name="api-tokens"),
    path("api/", include("annotation.api.urls")),
    path("api/", include("judging.api.urls")),
    path("api/", include("analysis.api.urls")),
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
