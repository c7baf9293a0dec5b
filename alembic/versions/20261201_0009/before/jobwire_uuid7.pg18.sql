-- jobwire_uuid7 as revision 20261130_0008 left it on PostgreSQL 18 (its downgrade restores it).
CREATE OR REPLACE FUNCTION jobwire_uuid7()
 RETURNS uuid
 LANGUAGE sql
AS $function$
SELECT uuidv7()
$function$;
