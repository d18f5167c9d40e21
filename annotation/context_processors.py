from django.http import HttpRequest

from flaskapp import roles


def roles_context(request: HttpRequest) -> dict:
    user = request.user
    return {
        "user_is_admin": roles.is_admin(user),
        "user_is_researcher": roles.is_researcher(user),
        "user_is_rater": roles.is_rater(user),
        "user_is_reviewer": roles.is_reviewer(user),
    }
