-- jobwire_uuid7 as revision 20261130_0008 left it (its downgrade restores it), but for the NOTIFY channel,
-- read from job_meta. Generated from pg_get_functiondef; kept as it was.
CREATE OR REPLACE FUNCTION jobwire_uuid7()
 RETURNS uuid
 LANGUAGE sql
AS $function$
SELECT CAST(encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) PLACING
    substring(int8send(CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS bigint)) FROM 3)
    FROM 1 FOR 6), 52, 1), 53, 1), 'hex') AS uuid)
$function$;
