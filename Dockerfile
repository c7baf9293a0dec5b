# Jobwire: the API and the dispatcher in one process.
#   docker build -t jobwire .
#   docker run -p 8000:8000 -e JOBWIRE_DATABASE_URL=postgresql://user:pass@db:5432/jobwire jobwire
# Without JOBWIRE_DATABASE_URL it starts an embedded PostgreSQL in /var/lib/jobwire/pg
# (mount a volume there to keep it). docker-compose.yml runs it with PostgreSQL 16.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --system --create-home --uid 10001 --user-group jobwire \
    && install -d -o jobwire -g jobwire /var/lib/jobwire

WORKDIR /src
COPY pyproject.toml README.md ./
COPY alembic ./alembic
COPY app ./app
COPY sdk/python ./sdk/python
RUN pip install . && cd / && rm -rf /src

USER jobwire
WORKDIR /var/lib/jobwire
ENV JOBWIRE_DATA_DIR=/var/lib/jobwire
VOLUME ["/var/lib/jobwire"]

EXPOSE 8000
CMD ["jobwire", "serve", "--host", "0.0.0.0"]
