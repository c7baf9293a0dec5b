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


def _curve(x1: float, y1: float, x2: float, y2: float) -> str:
    bend = max((x2 - x1) / 2, 20)
    return f"C{x1 + bend:.0f},{y1:.0f} {x2 - bend:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"


def layout(jobs: Sequence[WorkflowJobRow], total: int | None = None, cap: int = MAX_NODES) -> Graph:
    """The graph of `jobs` (the first `cap` by layer, then ref, when there are more). An edge that
    spans layers passes through a free slot of each layer between (a placeholder that takes a row,
    as in Sugiyama's layering), so it never runs behind another job's box."""
    depth = layers(jobs)
    order = sorted(jobs, key=lambda j: (depth[j.ref], j.ref))[:cap]
    drawn = {j.ref: j for j in order}
    # The items of each layer: jobs (by ref) and placeholders ((parent, child, layer)); each item's
    # upstream neighbours in the layer before it.
    columns: dict[int, list[str | tuple[str, str, int]]] = {}
    upstream: dict[str | tuple[str, str, int], list[str | tuple[str, str, int]]] = {}
    for job in order:
        columns.setdefault(depth[job.ref], []).append(job.ref)
        upstream[job.ref] = []
    for job in order:
        for parent in dict.fromkeys(job.depends_on):
            if parent not in drawn or depth[parent] >= depth[job.ref]:
                continue
            before: str | tuple[str, str, int] = parent
            for layer in range(depth[parent] + 1, depth[job.ref]):
                slot = (parent, job.ref, layer)
                columns.setdefault(layer, []).append(slot)
                upstream[slot] = [before]
                before = slot
            upstream[job.ref].append(before)
    row_of: dict[str | tuple[str, str, int], int] = {}

    def centre(item: str | tuple[str, str, int]) -> float:  # the mean row of its upstream items
        rows = [row_of[u] for u in upstream[item] if u in row_of]
        return sum(rows) / len(rows) if rows else float("inf")

    def x_of(layer: int) -> float:
        return MARGIN + layer * (NODE_WIDTH + COLUMN_GAP)

    def y_of(row: int) -> float:
        return MARGIN + row * (NODE_HEIGHT + ROW_GAP)

    nodes: dict[str, Node] = {}
    for layer in sorted(columns):
        column = columns[layer]
        if layer:  # by the mean row of their upstream items (a barycentre pass), jobs before slots, then ref
            column.sort(key=lambda item: (centre(item), isinstance(item, tuple), str(item)))
        for i, item in enumerate(column):
            row_of[item] = i
            if isinstance(item, str):
                job = drawn[item]
                nodes[item] = Node(job.ref, str(job.execution_id), job.state, layer, x_of(layer), y_of(i),
                                   _label(job.ref))
    edges = []
    for child in nodes.values():
        for parent_ref in dict.fromkeys(drawn[child.ref].depends_on):
            parent = nodes.get(parent_ref)
            if parent is None or parent.layer >= child.layer:
                continue
            x, y = parent.x + NODE_WIDTH, parent.y + NODE_HEIGHT / 2
            path = f"M{x:.0f},{y:.0f}"
            for layer in range(parent.layer + 1, child.layer):
                sx, sy = x_of(layer), y_of(row_of[(parent.ref, child.ref, layer)]) + NODE_HEIGHT / 2
                path += f" {_curve(x, y, sx, sy)} L{sx + NODE_WIDTH:.0f},{sy:.0f}"
                x, y = sx + NODE_WIDTH, sy
            path += " " + _curve(x, y, child.x, child.y + NODE_HEIGHT / 2)
            edges.append(Edge(path, parent.ref, child.ref))
    deepest = max(columns, default=0)
    width = MARGIN * 2 + (deepest + 1) * (NODE_WIDTH + COLUMN_GAP) - COLUMN_GAP
    tallest = max((len(c) for c in columns.values()), default=0)
    height = MARGIN * 2 + max(tallest, 1) * (NODE_HEIGHT + ROW_GAP) - ROW_GAP
    return Graph(list(nodes.values()), edges, width, height, total if total is not None else len(jobs))
