"""The durable record: SQLAlchemy models, the engine and the repository of queries."""
