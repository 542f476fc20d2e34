"""ternmq.protocol."""
