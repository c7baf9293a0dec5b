"""HTTP adapter: routes, schemas, problem+json errors. No SQL, no business rules."""
