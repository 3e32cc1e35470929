"""The PostgreSQL store (psycopg 3, the `postgres` extra) and the SQL that writes to it."""
