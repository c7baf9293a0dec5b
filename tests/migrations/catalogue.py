"""A schema's catalogue as plain data, to compare two databases object by object: tables,
columns (type, default, nullability, identity, position, comment), indexes with their predicates,
constraints, sequences, functions (their whole definition and comment), triggers, types, views,
policies, the database's extensions and the rows the migrations write (job_meta, alembic_version).

Read from pg_catalog rather than through SQLAlchemy's reflection, which leaves out what the
metadata cannot describe (function text, comments on functions, sequences' options, rows).
"""

from __future__ import annotations

from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

Catalogue = dict[str, dict[tuple[Any, ...], tuple[Any, ...]]]

# Each kind: a query over one schema ($1) whose first columns, up to `keys`, name an object and
# whose other columns describe it.
KINDS: dict[str, tuple[int, str]] = {
    "relation": (1, """
        SELECT c.relname, c.relkind, c.relpersistence, c.relrowsecurity, pg_get_userbyid(c.relowner),
               c.relacl::text, c.reloptions::text, obj_description(c.oid, 'pg_class')
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')"""),
    # position: among the live columns (a dropped column leaves a gap in attnum).
    "column": (2, """
        SELECT c.relname, a.attname,
               row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum) AS position,
               format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
               a.attidentity, a.attgenerated, a.attcollation::regcollation::text, col_description(c.oid, a.attnum)
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND a.attnum > 0 AND NOT a.attisdropped"""),
    "index": (1, """
        SELECT i.relname, t.relname, pg_get_indexdef(i.oid), x.indisunique, x.indisprimary,
               obj_description(i.oid, 'pg_class')
        FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_namespace n ON n.oid = i.relnamespace
        WHERE n.nspname = $1"""),
    "constraint": (2, """
        SELECT t.relname, con.conname, con.contype, pg_get_constraintdef(con.oid), con.condeferrable,
               con.condeferred, con.convalidated, obj_description(con.oid, 'pg_constraint')
        FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE n.nspname = $1"""),
    "sequence": (1, """
        SELECT c.relname, format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement, s.seqmin, s.seqmax,
               s.seqcache, s.seqcycle,
               (SELECT t.relname || '.' || a.attname || ' ' || CAST(d.deptype AS text)
                FROM pg_depend d JOIN pg_class t ON t.oid = d.refobjid
                JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.refclassid = 'pg_class'::regclass)
        FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1"""),
    # pg_get_functiondef: arguments, result, language, volatility, strictness, SET clauses, body.
    "function": (2, """
        SELECT p.proname, pg_get_function_identity_arguments(p.oid), p.prokind, pg_get_functiondef(p.oid),
               p.prosecdef, p.proleakproof, p.proparallel, p.procost, p.prorows, pg_get_userbyid(p.proowner),
               p.proacl::text, obj_description(p.oid, 'pg_proc')
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = $1"""),
    "trigger": (2, """
        SELECT c.relname, g.tgname, pg_get_triggerdef(g.oid), g.tgenabled
        FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND NOT g.tgisinternal"""),
    # User types: enums, domains, ranges, composites of their own (not a relation's row type or an array).
    "type": (1, """
        SELECT t.typname, t.typtype, format_type(t.typbasetype, t.typtypmod), t.typnotnull,
               (SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid)::text
        FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE n.nspname = $1 AND t.typelem = 0
          AND (t.typrelid = 0 OR (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) = 'c')"""),
    "view": (1, """
        SELECT c.relname, pg_get_viewdef(c.oid)
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('v', 'm')"""),
    "policy": (2, """
        SELECT c.relname, p.polname, p.polcmd, p.polpermissive, pg_get_expr(p.polqual, p.polrelid),
               pg_get_expr(p.polwithcheck, p.polrelid)
        FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1"""),
    # Database-wide: PostgreSQL has no extension per schema ($1 names where its objects went).
    "extension": (1, """
        SELECT e.extname, e.extversion, n.nspname = $1
        FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"""),
}

# The rows the migrations themselves write.
ROWS = {
    "job_meta": "SELECT key, value FROM {schema}.job_meta",
    "alembic_version": "SELECT version_num FROM {schema}.alembic_version",
}


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def read(url: str, schema: str = "public") -> Catalogue:
    conn = await asyncpg.connect(_dsn(url))
    try:
        catalogue: Catalogue = {}
        for kind, (keys, query) in KINDS.items():
            catalogue[kind] = {tuple(r)[:keys]: tuple(r)[keys:] for r in await conn.fetch(query, schema)}
        quoted = await conn.fetchval("SELECT quote_ident($1)", schema)
        for table, query in ROWS.items():
            present = await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", f"{quoted}.{table}")
            rows = await conn.fetch(query.format(schema=quoted)) if present else []
            catalogue[f"rows of {table}"] = {tuple(r): () for r in rows}
        return catalogue
    finally:
        await conn.close()


def differences(expected: Catalogue, found: Catalogue) -> list[str]:
    """Every object missing, extra or described differently in `found`, one line each."""
    lines: list[str] = []
    for kind in sorted(set(expected) | set(found)):
        want, have = expected.get(kind, {}), found.get(kind, {})
        for key in sorted(set(want) | set(have), key=repr):
            name = ".".join(str(k) for k in key)
            if key not in have:
                lines.append(f"{kind} {name}: missing")
            elif key not in want:
                lines.append(f"{kind} {name}: not expected")
            elif want[key] != have[key]:
                lines.append(f"{kind} {name}: {have[key]!r}, expected {want[key]!r}")
    return lines
