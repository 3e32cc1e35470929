"""The built-in SQLite store and the writer process that commits its steps."""
