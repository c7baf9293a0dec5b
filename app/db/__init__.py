"""The only package that talks to PostgreSQL (SQLAlchemy Core + asyncpg)."""
