"""ternmq.broker."""
