"""Tests of ternmq.selector (catalog SEL)."""
