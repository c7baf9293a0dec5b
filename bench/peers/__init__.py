"""Peer queues driven the way ../shared/bench-anchors/peers/ drives them, one subprocess each
(its own interpreter and uvloop), printing one JSON document: {measure: [per-run dicts]}."""
