"""The store seam: what a durable session writes, the journal that writes it, SQLite."""
