from django.urls import path

from flaskapp.sso import views

urlpatterns = [
    path("login/", views.SsoLoginView.as_view(), name="sso-login"),
    path("callback/", views.SsoCallbackView.as_view(), name="sso-callback"),
    path("no-workspace/", views.sso_no_workspace, name="sso-no-workspace"),
    path("token/", views.sso_token, name="sso-token"),
]
