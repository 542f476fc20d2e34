"""ternmq.message."""
