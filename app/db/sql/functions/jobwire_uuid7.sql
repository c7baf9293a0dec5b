-- A UUID version 7 (time-ordered) for new executions: the first 48 bits the Unix time in
-- milliseconds, the version nibble 7, the rest random (RFC 9562). New rows land beside their
-- neighbours in time in every index keyed by id. PostgreSQL 18 has it built in:
-- jobwire_uuid7.pg18.sql.
CREATE OR REPLACE FUNCTION jobwire_uuid7() RETURNS uuid
LANGUAGE sql VOLATILE
AS $function$
SELECT CAST(encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) PLACING
    substring(int8send(CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS bigint)) FROM 3)
    FROM 1 FOR 6), 52, 1), 53, 1), 'hex') AS uuid)
$function$;
