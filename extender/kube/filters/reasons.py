"""Exclusions grouped for people: one line per (rule, subject), most nodes first, with the
numbers of the first node by name ("3 nodes: insufficient cpu (e.g. gpu-a: cpu: needs 500
cores, 64 cores free)")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from extender.kube.filters.rules import Exclusion, Rule


@dataclass(frozen=True)
class ReasonGroup:
    message: str
    nodes: tuple[str, ...]
    rule: str
    """The rule's name (``Rule.value``), or ``extender`` for the extender's own reasons."""

    def describe(self) -> str:
        n = len(self.nodes)
        return f"{n} node{'s' if n != 1 else ''}: {self.message}"


def group_exclusions(excluded: Mapping[str, Exclusion]) -> list[ReasonGroup]:
    by_key: dict[tuple[Rule, str], list[str]] = {}
    for name, exclusion in sorted(excluded.items()):
        by_key.setdefault((exclusion.rule, exclusion.subject), []).append(name)
    groups = []
    for (rule, subject), names in by_key.items():
        exclusion = excluded[names[0]]
        text = Exclusion(rule, subject).message()
        if exclusion.detail and len(names) == 1:
            text += f" ({exclusion.detail})"
        elif exclusion.detail:
            text += f" (e.g. {names[0]}: {exclusion.detail})"
        groups.append(ReasonGroup(text, tuple(names), rule.value))
    return sort_groups(groups)


def group_messages(messages: Mapping[str, str], rule: str = "extender") -> list[ReasonGroup]:
    """Per-node messages (the extender's filter reasons) grouped by identical text."""
    by_text: dict[str, list[str]] = {}
    for name, text in sorted(messages.items()):
        by_text.setdefault(text, []).append(name)
    return sort_groups([ReasonGroup(t, tuple(n), rule) for t, n in by_text.items()])


def sort_groups(groups: Iterable[ReasonGroup]) -> list[ReasonGroup]:
    return sorted(groups, key=lambda g: (-len(g.nodes), g.message))


def describe(groups: Iterable[ReasonGroup]) -> str:
    return "; ".join(g.describe() for g in groups)
