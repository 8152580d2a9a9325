"""The library never imports pytest: only ``pytest_agentbench.plugin`` talks to pytest.

Each library module is imported in a fresh process of its own (forked from one that has loaded only
the standard library and the third-party packages the library uses, none of which loads pytest),
so a module that reaches pytest through another of the package's modules is caught too, and the
report names the innermost of the package's modules that asked for pytest.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_agentbench

PLUGIN_LAYER = "pytest_agentbench.plugin"
#: Library modules that still reach pytest, each for the reason given: they read a ``pytest.Config``
#: or raise ``pytest.UsageError`` themselves, or reach the plugin layer. Their tests are strict
#: xfails, so a module that stops importing pytest fails here until it is taken off this list.
KNOWN: dict[str, str] = {}
#: Those of them that load pytest as soon as they are imported (the others only when called).
AT_IMPORT: tuple[str, ...] = ()
#: Names kept importable at their old place for users, loaded from the plugin layer on first use
#: (PEP 562): importing the module itself loads nothing of pytest.
SHIMS = {"pytest_agentbench.outcomes": ("EpisodeFailed", "raise_outcome")}

PROBE = r"""
import importlib, json, os, sys

import httpx, PIL.Image, pydantic  # loaded once before forking; none of them loads pytest
assert "pytest" not in sys.modules and "_pytest" not in sys.modules, "a dependency loads pytest"


class Guard:
    culprit = None

    def find_spec(self, name, path=None, target=None):
        if Guard.culprit is None and name.split(".")[0] in ("pytest", "_pytest"):
            frame = sys._getframe(1)
            while frame is not None:
                module = frame.f_globals.get("__name__", "")
                if module.startswith("pytest_agentbench"):
                    Guard.culprit = module
                    break
                frame = frame.f_back
            else:
                Guard.culprit = "?"
        return None


offenders = {}
for name in json.loads(sys.argv[1]):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        sys.meta_path.insert(0, Guard())
        try:
            importlib.import_module(name)
            found = Guard.culprit if "pytest" in sys.modules or "_pytest" in sys.modules else None
        except BaseException as exc:
            found = f"import failed: {type(exc).__name__}: {exc}"
        os.write(write_end, json.dumps(found).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        found = json.loads(pipe.read() or "null")
    os.waitpid(pid, 0)
    if found:
        offenders[name] = found
print(json.dumps(offenders))
"""


def library_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(pytest_agentbench.__path__, "pytest_agentbench."):
        if info.name == PLUGIN_LAYER or info.name.startswith(PLUGIN_LAYER + "."):
            continue
        if info.name.endswith("_worker") or info.name.endswith("__main__"):
            continue  # scripts run in another interpreter, not imported
        names.append(info.name)
    return sorted(names)


MODULES = library_modules()


@pytest.fixture(scope="module")
def offenders() -> dict[str, str]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(MODULES)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_package_itself_loads_without_pytest() -> None:
    code = "import sys, pytest_agentbench; assert 'pytest' not in sys.modules and '_pytest' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_plugin_layer_is_the_only_exception() -> None:
    assert MODULES and all(not m.startswith(PLUGIN_LAYER) for m in MODULES)


def known(modules: list[str], among: tuple[str, ...] | dict[str, str] = tuple(KNOWN)) -> list[object]:
    return [pytest.param(m, marks=pytest.mark.xfail(reason=KNOWN[m], strict=True)) if m in among else m
            for m in modules]


@pytest.mark.parametrize("module", known(MODULES, AT_IMPORT))
def test_importing_a_library_module_does_not_load_pytest(module: str, offenders: dict[str, str]) -> None:
    assert module not in offenders, f"importing {module} loads pytest (through {offenders.get(module)})"


def pytest_imports(module: str) -> list[str]:
    """Every import of pytest, _pytest or the plugin layer in the module's source, at any depth (a
    function-level import loads pytest as surely, only later)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
        found += [n for n in names if n.split(".")[0] in ("pytest", "_pytest") or n.startswith(PLUGIN_LAYER)]
    return found


@pytest.mark.parametrize("module", known([m for m in MODULES if m not in SHIMS]))
def test_a_library_module_never_imports_pytest(module: str) -> None:
    assert pytest_imports(module) == []


@pytest.mark.parametrize(("module", "names"), SHIMS.items())
def test_shims_load_the_plugin_layer_only_on_use(module: str, names: tuple[str, ...],
                                                 offenders: dict[str, str]) -> None:
    assert module not in offenders
    code = f"import {module} as m, sys; assert 'pytest' not in sys.modules; " + "; ".join(f"m.{n}" for n in names)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, at any depth of its source (a function-level
    import is a dependency too, only a later one), leaving out ``if TYPE_CHECKING:`` blocks and
    module-level ``__getattr__`` (the PEP 562 shims that keep an old name importable)."""
    names = {info.name for info in pkgutil.walk_packages(pytest_agentbench.__path__, "pytest_agentbench.")}
    graph: dict[str, set[str]] = {}
    for name in names:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        found: set[str] = set()

        def visit(node: ast.AST, *, top: bool, found: set[str] = found) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue
                if top and isinstance(child, ast.FunctionDef) and child.name == "__getattr__":
                    continue
                if isinstance(child, ast.Import):
                    found.update(a.name for a in child.names)
                elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                    subs = {f"{child.module}.{a.name}" for a in child.names} & names
                    found.update(subs or {child.module})
                visit(child, top=False, found=found)

        visit(tree, top=True)
        graph[name] = {m for m in found if m in names and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def test_no_circle_of_imports_in_the_package() -> None:
    graph = import_graph()
    assert "pytest_agentbench.plugin.session" in graph["pytest_agentbench.plugin"]  # the graph sees lazy imports
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
