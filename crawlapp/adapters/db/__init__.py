"""The durable record: SQLAlchemy models, the engine, and every query: repository (URL rows,
links, fetch outcomes, hosts), dedup_rows (stored pages as dedup and verify see them),
maintenance (rebuild, takedowns, the fetch history export), batching (how they batch)."""
