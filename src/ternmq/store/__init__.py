"""ternmq.store."""
