# One image for the web server, the Celery workers and beat (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    FLASK_VAR_DIR=/app/var

WORKDIR /app

# Dependencies first, so code changes do not reinstall them.
# Parquet (requirements-parquet.txt) is optional for `make run`; the image has it.
COPY requirements.txt requirements-parquet.txt ./
RUN pip install -r requirements.txt -r requirements-parquet.txt

COPY . .

# Static files are collected at build time and served by WhiteNoise. The key given here
# is only for this build step; the containers get theirs from DJANGO_SECRET_KEY.
RUN useradd --create-home --uid 1000 app \
    && mkdir -p /app/var/media \
    && DJANGO_SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput --verbosity 0 \
    && chown -R app:app /app/var

USER app
EXPOSE 8000
CMD ["gunicorn", "flaskapp.wsgi", "-b", "0.0.0.0:8000", "-w", "4", "--threads", "4"]
