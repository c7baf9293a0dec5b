"""A workflow's graph as its dashboard page draws it (app/ui/graph.py): layers by dependency depth,
parents left of their children, the drawing capped."""

from __future__ import annotations

import uuid

from app.domain.workflows import WorkflowJobRow
from app.ui.graph import layers, layout


def job(ref: str, *parents: str, state: str = "WAITING") -> WorkflowJobRow:
    return WorkflowJobRow(ref=ref, execution_id=uuid.uuid4(), state=state, queue="q", depends_on=parents)


def test_a_job_sits_one_layer_right_of_its_deepest_parent():
    jobs = [job("load", "clean", "extract"), job("clean", "extract"), job("extract"), job("alone")]
    assert layers(jobs) == {"extract": 0, "alone": 0, "clean": 1, "load": 2}


def test_a_parent_not_among_the_jobs_counts_for_nothing_and_a_cycle_does_not_loop():
    assert layers([job("a", "gone")]) == {"a": 0}
    depth = layers([job("x", "y"), job("y", "x")])
    assert sorted(depth.values()) == [0, 1]


def test_the_layout_draws_a_node_per_job_and_an_edge_per_dependency():
    graph = layout([job("a", state="SUCCEEDED"), job("b", "a"), job("c", "a"), job("d", "b", "c")])
    assert [n.ref for n in graph.nodes] == ["a", "b", "c", "d"] and len(graph.edges) == 4
    x = {n.ref: n.x for n in graph.nodes}
    assert x["a"] < x["b"] == x["c"] < x["d"] and not graph.capped
    assert all(0 <= n.x and n.x + graph.node_width <= graph.width and n.y + graph.node_height <= graph.height
               for n in graph.nodes)


def test_beyond_the_cap_the_shallowest_jobs_are_drawn_and_the_graph_says_so():
    jobs = [job("root")] + [job(f"leaf-{i:03}", "root") for i in range(300)]
    graph = layout(jobs, cap=200)
    assert len(graph.nodes) == 200 and graph.total == 301 and graph.capped
    assert graph.nodes[0].ref == "root" and len(graph.edges) == 199
    assert layout([job("a" * 40)]).nodes[0].label.endswith("…")


def test_an_edge_that_spans_layers_passes_through_a_free_slot_not_behind_a_box():
    graph = layout([job("a"), job("b", "a"), job("c", "a", "b")])
    long_edge = next(e for e in graph.edges if (e.parent, e.child) == ("a", "c"))
    short = next(e for e in graph.edges if (e.parent, e.child) == ("a", "b"))
    assert " L" in long_edge.path and " L" not in short.path
    b = next(n for n in graph.nodes if n.ref == "b")
    assert graph.height >= 2 * graph.node_height  # layer 1 holds b and the slot of a → c
    slot_y = float(long_edge.path.split(" L")[1].split()[0].split(",")[1])
    assert not b.y <= slot_y <= b.y + graph.node_height
