"""Judge config pages: the list, the detail page (settings, versions, runs, a
connection test) and the form, new or changed (researchers; new endpoints need
endpoint rights, see `judging.endpoints`)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from flaskapp import roles
from flaskapp.errors import DomainError
from flaskapp.htmx import render_page_or_fragment, wants_fragment
from flaskapp.workspaces import current_workspace
from judging import endpoints
from judging.forms import JudgeConfigForm
from judging.selectors import configs as config_selectors
from judging.selectors import runs as selectors
from judging.services.configs import (
    EDITABLE_FIELDS,
    judge_config_create,
    judge_config_update,
)
from judging.services.connection import judge_config_test_connection

RUNS_PER_PAGE = 50
CALLS_PER_PAGE = 25
SUGGESTIONS_PER_PAGE = 50


@login_required
@require_GET
def judge_list(request: HttpRequest) -> HttpResponse:
    """Every judge config, with its env var's name and whether the server has it set."""
    configs = list(
        selectors.judge_config_list_for_user(
            user=request.user, workspace=current_workspace(request)
        )
    )
    for config in configs:
        config.api_key_set = selectors.api_key_is_set(config.api_key_env)
    return render(request, "judging/judge_list.html", {"configs": configs})


@login_required
@require_GET
def judge_detail(request: HttpRequest, config_id: int) -> HttpResponse:
    """One judge config: its settings (the key variable's name and whether the server
    has it, never the key), its versions, the runs made with it, a connection test."""
    config = selectors.judge_config_get_for_user(user=request.user, config_id=config_id)
    return render(
        request, "judging/judge_detail.html", _detail_context(request, config)
    )


@login_required
@require_POST
def judge_test_connection(request: HttpRequest, config_id: int) -> HttpResponse:
    """Send one small request to the judge's endpoint (`judge_config_test_connection`)
    and show the outcome: the `#connection-result` fragment for htmx, else the page."""
    config = selectors.judge_config_get_for_user(user=request.user, config_id=config_id)
    check = judge_config_test_connection(user=request.user, config=config)
    context = _detail_context(request, config)
    context["check"] = check
    return render_page_or_fragment(
        request, "judging/judge_detail.html", "connection-result", context
    )


def _detail_context(request: HttpRequest, config) -> dict:
    runs = selectors.judge_run_list_for_user(user=request.user, config_id=config.pk)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    counts = selectors.judge_run_counts(run_ids=[r.pk for r in page])
    rows = [
        (run, counts[run.pk], config_selectors.run_config_version(run)) for run in page
    ]
    versions = config_selectors.judge_config_version_list_for_user(
        user=request.user, config=config
    )
    return {
        "config": config,
        "api_key_set": selectors.api_key_is_set(config.api_key_env),
        "versions": config_selectors.version_changes(list(versions)),
        "page": page,
        "rows": rows,
    }


# A key pasted by mistake into the env var field must not reach an error report.
@sensitive_post_parameters("api_key_env")
@login_required
@require_http_methods(["GET", "POST"])
def judge_new(request: HttpRequest) -> HttpResponse:
    """Create a judge config.

    With htmx, typing the env var's name asks this URL (GET ?api_key_env=NAME) for
    the `#api-key-status` fragment: whether the server's environment has it set, for
    a declared key variable only (any other name is reported as not declared).
    """
    roles.require_researcher(request.user)
    if request.method == "GET" and wants_fragment(request):
        env = request.GET.get("api_key_env", "").strip()
        context = {"env_name": env, "env_set": selectors.api_key_is_set(env)}
        return render_page_or_fragment(
            request, "judging/judge_new.html", "api-key-status", context
        )
    return _judge_form_page(request, config=None)


@sensitive_post_parameters("api_key_env")
@login_required
@require_http_methods(["GET", "POST"])
def judge_edit(request: HttpRequest, config_id: int) -> HttpResponse:
    """Change a judge config: its judging parameters (any researcher) and its
    endpoint (endpoint rights, or a configured endpoint; see `judging.endpoints`)."""
    config = selectors.judge_config_get_for_user(user=request.user, config_id=config_id)
    return _judge_form_page(request, config=config)


def _judge_form_page(request: HttpRequest, *, config) -> HttpResponse:
    status = 200
    if request.method == "POST":
        workspace = current_workspace(request)
        form = JudgeConfigForm(
            request.POST,
            user=request.user,
            config=config,
            workspace_id=workspace.pk if workspace else None,
        )
        if form.is_valid():
            try:
                if config is None:
                    config = judge_config_create(
                        user=request.user,
                        workspace=workspace,
                        **form.service_fields(),
                    )
                else:
                    config = judge_config_update(
                        user=request.user, config=config, **form.service_fields()
                    )
            except DomainError as exc:
                form.add_problems(exc)
            else:
                messages.success(
                    request, f"Judge “{config.name}” saved (version {config.version})."
                )
                return redirect("judging:judge-detail", config_id=config.pk)
        typed = (form.data.get("api_key_env") or "").strip()
        if form.has_error("api_key_env") or not endpoints.key_env_declared(typed):
            # What was typed may be a pasted key: never send it back to the browser.
            form.data = form.data.copy()
            form.data["api_key_env"] = ""
        status = 400
    else:
        initial = None
        if config is not None:
            initial = {name: getattr(config, name) for name in EDITABLE_FIELDS}
        workspace = current_workspace(request)
        form = JudgeConfigForm(
            initial=initial,
            user=request.user,
            config=config,
            workspace_id=workspace.pk if workspace else None,
        )
    env = (form["api_key_env"].value() or "").strip()
    context = {
        "form": form,
        "config": config,
        "env_name": env,
        "env_set": selectors.api_key_is_set(env),
    }
    return render(request, "judging/judge_new.html", context, status=status)
