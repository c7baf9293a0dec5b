"""A workflow's graph as an SVG drawn by its page (no graph library): its jobs layered by dependency
depth (a job sits one layer right of its deepest parent), ordered in each layer by their parents'
rows to keep edges short, and drawn as boxes coloured by state with an edge from each parent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.domain.workflows import WorkflowJobRow

MAX_NODES = 200  # drawn at most; the page says so beyond
NODE_WIDTH, NODE_HEIGHT = 170, 34
COLUMN_GAP, ROW_GAP = 70, 14
MARGIN = 10
LABEL_CHARS = 20


@dataclass(frozen=True, slots=True)
class Node:
    ref: str
    execution_id: str
    state: str
    layer: int
    x: float
    y: float
    label: str


@dataclass(frozen=True, slots=True)
class Edge:
    path: str
    parent: str
    child: str


@dataclass(frozen=True, slots=True)
class Graph:
    nodes: list[Node]
    edges: list[Edge]
    width: float
    height: float
    total: int  # the jobs there are: more than len(nodes) when capped
    node_width: int = NODE_WIDTH
    node_height: int = NODE_HEIGHT

    @property
    def capped(self) -> bool:
        return self.total > len(self.nodes)


def layers(jobs: Sequence[WorkflowJobRow]) -> dict[str, int]:
    """Each job's depth: 0 without parents (or with none among `jobs`), else one more than its
    deepest parent's. POST /v1/workflows refuses a cycle; were there one, the walk would not loop:
    a parent still on the walk's path is left out."""
    parents = {j.ref: [p for p in j.depends_on if p != j.ref] for j in jobs}
    parents = {ref: [p for p in ps if p in parents] for ref, ps in parents.items()}
    depth: dict[str, int] = {}
    for start in parents:
        stack, on_path = [start], set()
        while stack:
            ref = stack[-1]
            if ref in depth:
                stack.pop()
                continue
            pending = [p for p in parents[ref] if p not in depth and p not in on_path]
            if pending and ref not in on_path:
                on_path.add(ref)
                stack.extend(pending)
                continue
            depth[ref] = max((depth[p] + 1 for p in parents[ref] if p in depth), default=0)
            on_path.discard(ref)
            stack.pop()
    return depth


def _label(ref: str) -> str:
    return ref if len(ref) <= LABEL_CHARS else ref[:LABEL_CHARS - 1] + "…"


def layout(jobs: Sequence[WorkflowJobRow], total: int | None = None, cap: int = MAX_NODES) -> Graph:
    """The graph of `jobs` (the first `cap` by layer, then ref, when there are more)."""
    depth = layers(jobs)
    by_ref = {j.ref: j for j in jobs}
    order = sorted(jobs, key=lambda j: (depth[j.ref], j.ref))[:cap]
    columns: dict[int, list[WorkflowJobRow]] = {}
    for job in order:
        columns.setdefault(depth[job.ref], []).append(job)
    row_of: dict[str, float] = {}
    nodes: dict[str, Node] = {}
    for layer in sorted(columns):
        column = columns[layer]
        if layer:  # by the mean row of its drawn parents (a barycentre pass), then ref
            def centre(job: WorkflowJobRow) -> float:
                rows = [row_of[p] for p in job.depends_on if p in row_of]
                return sum(rows) / len(rows) if rows else float("inf")

            column.sort(key=lambda j: (centre(j), j.ref))
        for i, job in enumerate(column):
            row_of[job.ref] = i
            nodes[job.ref] = Node(job.ref, str(job.execution_id), job.state, layer,
                                  MARGIN + layer * (NODE_WIDTH + COLUMN_GAP), MARGIN + i * (NODE_HEIGHT + ROW_GAP),
                                  _label(job.ref))
    edges = []
    for child in nodes.values():
        for parent_ref in by_ref[child.ref].depends_on:
            parent = nodes.get(parent_ref)
            if parent is None:
                continue
            x1, y1 = parent.x + NODE_WIDTH, parent.y + NODE_HEIGHT / 2
            x2, y2 = child.x, child.y + NODE_HEIGHT / 2
            bend = max((x2 - x1) / 2, 20)
            edges.append(Edge(f"M{x1:.0f},{y1:.0f} C{x1 + bend:.0f},{y1:.0f} {x2 - bend:.0f},{y2:.0f} "
                              f"{x2:.0f},{y2:.0f}", parent.ref, child.ref))
    deepest = max((n.layer for n in nodes.values()), default=0)
    width = MARGIN * 2 + (deepest + 1) * (NODE_WIDTH + COLUMN_GAP) - COLUMN_GAP
    tallest = max((len(c) for c in columns.values()), default=0)
    height = MARGIN * 2 + max(tallest, 1) * (NODE_HEIGHT + ROW_GAP) - ROW_GAP
    return Graph(list(nodes.values()), edges, width, height, total if total is not None else len(jobs))
