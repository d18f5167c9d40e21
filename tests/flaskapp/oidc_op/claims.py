"""The test provider's claims: standard profile claims and a ``groups`` scope."""

from oidc_provider.lib.claims import ScopeClaims


def userinfo(claims, user):
    claims["preferred_username"] = user.username
    claims["email"] = user.email
    claims["email_verified"] = True
    claims["given_name"] = user.first_name
    claims["family_name"] = user.last_name
    return claims


def subject(user):
    return f"op-user-{user.pk}"


class GroupsClaims(ScopeClaims):
    info_groups = ("Groups", "The groups you belong to.")

    def scope_groups(self):
        return {"groups": sorted(self.user.groups.values_list("name", flat=True))}
