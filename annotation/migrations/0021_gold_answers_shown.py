"""`Assignment.answers_shown`: a gold item whose expected answers its rater was shown
is training for that rater, never again a test (`services.gold.gold_pick`).

Backfill: the answers already shown are those of failed qualification attempts (the
report lists them) and of gold items submitted in campaigns now in their training
phase (their feedback can be shown again)."""

from django.db import migrations, models


def backfill(apps, schema_editor):
    Assignment = apps.get_model("annotation", "Assignment")
    Assignment.objects.filter(gold=True, qualification__status="failed").update(
        answers_shown=True
    )
    Assignment.objects.filter(
        gold=True, status="submitted", campaign__training_phase=True
    ).update(answers_shown=True)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0020_text_limits"),
    ]

    operations = [
        migrations.AddField(
            model_name="assignment",
            name="answers_shown",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
