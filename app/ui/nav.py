"""The dashboard's navigation: one line per page. A page is a router module under app/ui/pages
(added to PAGES in app/ui/app.py) and its entry here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NavItem:
    label: str
    href: str

    def current(self, path: str) -> bool:
        return path == self.href or (self.href != "/ui" and path.startswith(self.href + "/"))


NAV = (
    NavItem("Overview", "/ui"),
    NavItem("Executions", "/ui/executions"),
    NavItem("Dead letters", "/ui/dead-letters"),
    NavItem("Workflows", "/ui/workflows"),
    NavItem("Schedules", "/ui/schedules"),
    NavItem("Handlers", "/ui/handlers"),
    NavItem("Flow control", "/ui/flow"),
    NavItem("Nodes", "/ui/nodes"),
    NavItem("Subscriptions", "/ui/subscriptions"),
)
