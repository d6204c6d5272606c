"""The README's quickstart works as written: the zero-build step runs for real, every file and
link it names exists, and every `helm install` it shows renders with the real helm (deploy)."""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.helm import Helm, find_helm

ROOT = Path(__file__).parents[2]
DOCS = [ROOT / "README.md", ROOT / "charts" / "gpu-extender" / "README.md",
        *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def quickstart() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Quickstart")
    return text[start:text.index("\n## ", start + 1)]


def commands(section: str) -> list[str]:
    """Shell commands of the section's ```sh blocks, continuation lines joined, comments cut."""
    out: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            command = line.split(" #", 1)[0].strip()
            if command:
                out.append(command)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path, _, anchor = target.partition("#")
        resolved = (doc.parent / path).resolve()
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", resolved.read_text(), flags=re.M)
            if anchor not in {slug(h) for h in headings}:
                broken.append(target)
    assert broken == [], f"{doc.name}: links that lead nowhere"


def test_every_file_the_quickstart_names_exists() -> None:
    named = [word for command in commands(quickstart()) for word in shlex.split(command)
             if re.search(r"\.(ya?ml|json)$", word) and "/" in word]
    assert named, "the quickstart names no file"
    assert [f for f in named if not (ROOT / f).is_file()] == []


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served_example() -> Iterator[str]:
    """`gpu-extender serve --cluster-file ...` as the quickstart starts it."""
    (serve,) = [c for c in commands(quickstart()) if " serve " in c]
    args = shlex.split(serve.rstrip("&").strip())
    port = _free_port()
    args[args.index("--port") + 1] = str(port)
    process = subprocess.Popen([sys.executable, "-m", "extender", *args[1:]], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            try:
                with urllib.request.urlopen(url + "/readyz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_zero_build_step_serves_the_example_and_inspect_reads_it(served_example: str) -> None:
    (inspect,) = [c for c in commands(quickstart()) if " inspect --url" in c]
    args = shlex.split(inspect)
    args[args.index("--url") + 1] = served_example
    result = subprocess.run([sys.executable, "-m", "extender", *args[1:]], cwd=ROOT,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    for gpu_type in ("t4", "l4", "a10g", "a100-80gb"):
        assert f" {gpu_type} " in result.stdout
    # the MIG node: two A100s (8 MIG slots each) holding 2 x 3g.40gb and 7 x 1g.10gb
    (mig,) = [line for line in result.stdout.splitlines() if line.startswith("gpu-a100-mig-0")]
    assert "/16" in mig


@pytest.mark.deploy
def test_every_helm_install_in_the_quickstart_renders() -> None:
    installs = [shlex.split(c) for c in commands(quickstart()) if c.startswith("helm install")]
    assert len(installs) == 4  # GKE, EKS, AKS, on-prem
    helm = Helm(find_helm())
    for args in installs:
        rendered = helm.run("template", *args[2:])
        assert "image: \"REGISTRY/gpu-extender:0.1.0\"" in rendered, args
