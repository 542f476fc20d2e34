"""ternmq.client."""
