from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotation import views as annotation_views

urlpatterns = [
    path("", annotation_views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("django-admin/", admin.site.urls),
    path("", include("annotation.urls")),
    path("", include("annotation.urls_rating")),
    path("", include("annotation.urls_pairwise")),
    path("", include("judging.urls")),
    path("api/", include("annotation.api.urls")),
    path("api/", include("annotation.api.rating_urls")),
    path("api/", include("annotation.api.pairwise_urls")),
    path("api/", include("judging.api.urls")),
    path("api/", include("judging.api.export_urls")),
    path("api/", include("judging.api.training_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(url_name="api-schema"),
        name="api-docs",
    ),
]
