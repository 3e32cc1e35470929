"""The built-in SQLite store and the SQL that writes to it."""
