"""Object metadata is read only through ``kube.objects`` (``meta``, ``name``, ``namespace``,
``uid``, ``labels``, ``annotations``, ``pod_key``): one place knows what a missing, ``null`` or
wrong-typed ``metadata`` reads as (``namespace: null`` is ``""``, never the string ``"None"``).

An AST walk over ``extender/``: a read is ``x["metadata"]`` in a load, or ``x.get("metadata")``.
Building or editing an object's metadata is not a read: ``{"metadata": {...}}``,
``x.setdefault("metadata", {})``, ``x["metadata"]["k"] = v`` and ``x["metadata"].pop(...)`` /
``.setdefault(...)`` / ``.update(...)`` are allowed anywhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

EXTENDER = Path(__file__).resolve().parents[2] / "extender"
OWNER = EXTENDER / "kube" / "objects.py"
EDITS = frozenset({"setdefault", "update", "pop"})
ALLOWED: dict[str, str] = {
    # file (relative to extender/) -> why it may read metadata by hand
    "server/wire.py": "the extender wire codec: decode checks every node's name through "
                      "objects.name, then the verbs' hot path reads those names and echoes the "
                      "NodeList's own metadata back as sent",
    "sync/echo.py": "compares a bound pod's raw metadata with its pending version's, key by "
                    "key: a wrong-typed part must fail the comparison (as the shape check "
                    "would), not read as empty",
    "sync/status_reports.py": "digests a bound pod's raw metadata (less what the API server "
                              "writes on every update): a wrong-typed part must miss the kept "
                              "decode (as the shape check would fail it), not read as empty",
    "webhook/certs.py": "edits the webhook manifests it rendered (drops cert-manager's "
                        "injection annotation before writing the caBundle)",
}


def _is_metadata(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "metadata"


def metadata_reads(source: str) -> list[int]:
    """Lines of ``source`` that read ``metadata`` by hand."""
    tree = ast.parse(source)
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_metadata(node.slice) and \
                isinstance(node.ctx, ast.Load):
            parent = parents.get(node)
            if isinstance(parent, ast.Subscript) and parent.value is node and \
                    isinstance(parent.ctx, ast.Store | ast.Del):
                continue  # x["metadata"]["k"] = v
            if isinstance(parent, ast.Attribute) and parent.attr in EDITS:
                continue  # x["metadata"].setdefault(...)
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "get" and node.args and _is_metadata(node.args[0]):
            lines.append(node.lineno)
    return sorted(lines)


def test_the_walk_tells_reads_from_writes() -> None:
    source = (
        'a = pod["metadata"]\n'                        # 1 read
        'b = (pod.get("metadata") or {}).get("uid")\n'  # 2 read
        'pod["metadata"]["namespace"] = "x"\n'         # 3 write
        'pod.setdefault("metadata", {})\n'             # 4 write
        'pod["metadata"].setdefault("uid", "u")\n'     # 5 write
        'c = {"metadata": {"name": "n"}}\n'            # 6 build
        'del pod["metadata"]["uid"]\n'                 # 7 write
    )
    assert metadata_reads(source) == [1, 2]


def test_no_module_reads_metadata_by_hand() -> None:
    found = []
    for path in sorted(EXTENDER.rglob("*.py")):
        if path == OWNER:
            continue
        relative = str(path.relative_to(EXTENDER))
        if relative in ALLOWED:
            continue
        found += [f"extender/{relative}:{line}"
                  for line in metadata_reads(path.read_text(encoding="utf-8"))]
    assert not found, ("read metadata through extender.kube.objects (meta, name, namespace, "
                       "uid, labels, annotations, pod_key), not by hand: " + ", ".join(found))


def test_the_allow_list_is_still_needed() -> None:
    for relative in ALLOWED:
        assert metadata_reads((EXTENDER / relative).read_text(encoding="utf-8")), \
            f"extender/{relative} no longer reads metadata by hand: drop it from ALLOWED"
