-- A UUID version 7 (time-ordered) for new executions: PostgreSQL 18's own uuidv7(). Servers
-- before 18 build the same layout: jobwire_uuid7.sql.
CREATE OR REPLACE FUNCTION jobwire_uuid7() RETURNS uuid
LANGUAGE sql VOLATILE
AS $function$
SELECT uuidv7()
$function$;
