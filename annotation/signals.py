"""Membership and role changes release a removed rater's live locks.

Receivers of `m2m_changed`, so that every way of removing a rater does it: the
campaign's rater form (`campaign_set_raters`), the API, the Django admin (its forms
save many-to-many fields with ``set()``, which removes), a shell. `Campaign.raters`
(either side: a campaign losing users, a user losing campaigns) and `User.groups`
(losing the rater group, from either side) are watched; ``clear`` is read before it
happens (``pre_clear``), since afterwards the removed ids are gone. The receivers run
inside the transaction that removes the rows, so the removal and the release commit
together. Submitted scores stay; the campaign page marks them as from a removed rater.

Why signals, against the house rule (no workflows in signals): a membership and a
role are plain many-to-many rows that Django's admin and shells change without going
through a service; a service-only release would leave the locks of a rater removed
there held until they expire. The receivers only call one service,
`serving.rater_locks_release`, and hold no rule of their own.

Deleting the rater group itself releases the locks of all its members
(``pre_delete``). Not covered (no signal is sent): renaming the rater group, or
deleting rows of the through tables with a queryset ``delete()``. The rating
operations still refuse such a rater; their locks then expire after the campaign's
lock time.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db.models.signals import m2m_changed, pre_delete
from django.dispatch import receiver

from annotation.models import Campaign
from annotation.services.serving import (
    REMOVED_NOTE,
    ROLE_REMOVED_NOTE,
    rater_locks_release,
)
from flaskapp import roles

CampaignRaters = Campaign.raters.through
UserGroups = User.groups.through


@receiver(m2m_changed, sender=CampaignRaters)
def campaign_raters_changed(sender, instance, action, reverse, pk_set, **kwargs):
    if action == "pre_clear":
        # Before the rows go: which (user, campaign) pairs are about to be cut.
        if reverse:  # user.campaigns.clear()
            pk_set = set(instance.rating_campaigns.values_list("pk", flat=True))
        else:
            pk_set = set(instance.raters.values_list("pk", flat=True))
    elif action != "post_remove" or not pk_set:
        return
    for pk in pk_set:
        user_id, campaign_id = (instance.pk, pk) if reverse else (pk, instance.pk)
        rater_locks_release(
            rater_id=user_id, campaign_ids=[campaign_id], note=REMOVED_NOTE
        )


@receiver(m2m_changed, sender=UserGroups)
def user_groups_changed(sender, instance, action, reverse, pk_set, **kwargs):
    if action not in ("pre_clear", "post_remove"):
        return  # additions (and the other halves of each change) cost no query
    rater_group = Group.objects.filter(name=roles.RATER).values_list("pk", flat=True)
    rater_group_id = next(iter(rater_group), None)
    if rater_group_id is None:
        return
    if action == "pre_clear":
        if reverse:  # group.user_set.clear()
            if instance.pk != rater_group_id:
                return
            user_ids = list(instance.user_set.values_list("pk", flat=True))
        else:
            if not instance.groups.filter(pk=rater_group_id).exists():
                return
            user_ids = [instance.pk]
    elif action == "post_remove" and pk_set:
        if reverse:  # group.user_set.remove(users)
            user_ids = list(pk_set) if instance.pk == rater_group_id else []
        else:
            user_ids = [instance.pk] if rater_group_id in pk_set else []
    else:
        return
    for user_id in user_ids:
        rater_locks_release(rater_id=user_id, note=ROLE_REMOVED_NOTE)


@receiver(pre_delete, sender=Group)
def rater_group_deleted(sender, instance, **kwargs):
    if instance.name != roles.RATER:
        return
    for user_id in instance.user_set.values_list("pk", flat=True):
        rater_locks_release(rater_id=user_id, note=ROLE_REMOVED_NOTE)
