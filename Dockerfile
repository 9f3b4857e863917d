# Concord web, worker and beat image (the same image, different commands in docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    UV_PROJECT_ENVIRONMENT=/opt/venv UV_PYTHON_DOWNLOADS=never PATH=/opt/venv/bin:$PATH
WORKDIR /app
RUN pip install --no-cache-dir uv==0.13.8
COPY pyproject.toml uv.lock ./
RUN uv sync --frozen --no-dev --no-install-project
COPY . .
# The manifest storage of production settings; the key and host exist only for this build step.
RUN CONCORD_ENV=production ALLOWED_HOSTS=build \
    SECRET_KEY=build-only-collectstatic-key-never-used-at-runtime-0123456789 \
    python manage.py collectstatic --noinput -v0 \
    && useradd --system --uid 10001 concord
USER concord
EXPOSE 8000
CMD ["gunicorn", "concord.wsgi:application", "--bind", "0.0.0.0:8000", "--worker-class", "gthread", "--workers", "3", "--threads", "4"]
