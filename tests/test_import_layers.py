"""No import cycle between nupa_jax's subpackages, lazy imports included.

Every `import` / `from ... import` in every module of nupa_jax, at any depth (inside functions,
classes, conditionals), is read with `ast`; each names an edge between two units — a
subpackage (`nupa_jax.data`) or a top-level module (`nupa_jax.checkpoint`). A cycle among the
units means some lower layer reaches a higher one: the fix is a registry the higher layer
registers into (`nupa_jax.runmode`), not an import placed inside a function.
"""
import ast
import pathlib

import nupa_jax

ROOT = pathlib.Path(nupa_jax.__file__).parent


def _unit(module: str) -> str | None:
  """`nupa_jax.data.pipeline` -> `data`; `nupa_jax.checkpoint` -> `checkpoint`; None outside."""
  parts = module.split(".")
  if parts[0] != "nupa_jax" or len(parts) < 2:
    return None
  return parts[1]


def _module_name(path: pathlib.Path) -> str:
  parts = path.relative_to(ROOT.parent).with_suffix("").parts
  return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.AST, module: str, is_package: bool) -> set[str]:
  """Absolute names of every module `tree` imports (`from a import b`: `a.b` and `a`)."""
  out = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      out.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
      if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(package[:len(package) - node.level + 1] +
                        ([node.module] if node.module else []))
      else:
        base = node.module
      out.add(base)
      out.update(f"{base}.{alias.name}" for alias in node.names)
  return out


def unit_graph() -> dict[str, set[str]]:
  """{unit: units it imports}, over every module of nupa_jax."""
  graph: dict[str, set[str]] = {}
  for path in sorted(ROOT.rglob("*.py")):
    module = _module_name(path)
    unit = _unit(module)
    if unit is None:
      continue
    tree = ast.parse(path.read_text(), str(path))
    targets = {_unit(name) for name in _imported(tree, module, path.name == "__init__.py")}
    graph.setdefault(unit, set()).update(t for t in targets if t and t != unit)
  return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
  """The strongly connected groups of more than one unit (Tarjan), each sorted."""
  index, low, stack, on_stack, out = {}, {}, [], set(), []

  def visit(node):
    index[node] = low[node] = len(index)
    stack.append(node)
    on_stack.add(node)
    for nxt in sorted(graph.get(node, ())):
      if nxt not in index:
        visit(nxt)
        low[node] = min(low[node], low[nxt])
      elif nxt in on_stack:
        low[node] = min(low[node], index[nxt])
    if low[node] == index[node]:
      group = []
      while True:
        member = stack.pop()
        on_stack.discard(member)
        group.append(member)
        if member == node:
          break
      if len(group) > 1:
        out.append(sorted(group))

  for node in sorted(graph):
    if node not in index:
      visit(node)
  return out


def test_cycle_finder_sees_lazy_and_relative_imports():
  tree = ast.parse("import os\ndef f():\n  from nupa_jax.training import state\n"
                   "  if True:\n    from . import sibling\n")
  names = _imported(tree, "nupa_jax.data.pipeline", is_package=False)
  assert {"nupa_jax.training.state", "nupa_jax.data.sibling"} <= names
  assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
  assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_cycle_between_subpackages():
  found = cycles(unit_graph())
  assert not found, ("import cycles between nupa_jax subpackages (lower layers must not import "
                     f"higher ones, lazily or not): {found}")
