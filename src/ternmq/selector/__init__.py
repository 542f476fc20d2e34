"""ternmq.selector."""
