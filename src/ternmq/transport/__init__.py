"""ternmq.transport."""
