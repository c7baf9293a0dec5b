"""The only package that talks to PostgreSQL.

Every statement of Jobwire runs through app.db.statements on a connection of the node's one
asyncpg pool (app.db.database); SQLAlchemy is the schema's language (tables.py, alembic's target
metadata) and the migrations' tooling, and the transactional-enqueue helper (outbox.py) accepts
an application's SQLAlchemy connection too.
"""
