"""Runs a rule one statement at a time and writes down every step: the RF-CoT response.

A rule is a plain Python function over digit strings and small integers, registered with
`@rule` (rules_*.py). The prompt shows its source; this module executes that same source,
parsed once, so what the model reads and what the trace follows cannot drift apart. The subset
is small on purpose: assignments to names or tuples of names (and `+=`-style updates), `if` /
`elif` / `else`, `while`, `return`, the builtins int / str / len / max / min / range, string
methods, list comprehensions, and calls to other rules as the whole right-hand side of an
assignment or a `return`.

What a trace holds (the paper's appendix "Data Format of Rule-following CoT"):
- the rule's arguments, one `name = value` line each;
- each group of straight-line statements (blank lines in the source separate groups) as a
  fenced code block, then one line per assignment: the expression with every variable, call
  and subscript replaced by its value, and the result — `total = 28 + 35 + 0 = 63` (none for
  a literal such as `carry = 0`: the code already says it);
- each `while` / `if` test as a fenced header, then `check the stop criterion: ... is True` or
  `check the condition: ... is False`, and `enter the loop` / `end the loop` / `enter the
  branch` / `skip the branch` / `enter the else branch`;
- a call to another rule as `enter function: NAME`, the callee's own trace, `exit function:
  NAME` and the assignment of its result;
- `return VALUE`.
Values print as Python literals (`'063'`, `4140`, `[345, 12]`).
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import re
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

FENCE = "```"
BUILTINS = {"int": int, "str": str, "len": len, "max": max, "min": min, "range": range}
_GLOBALS = {"__builtins__": {}, **BUILTINS}
# Sub-expressions shown by their value: everything but operators, literals and containers.
_SCOPES = (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp, ast.Lambda)
_ATOMS = (ast.Name, ast.Call, ast.Subscript, ast.IfExp, ast.Attribute) + _SCOPES
_PLACEHOLDER = re.compile(r"__atom(\d+)__")
MAX_LOOP_STEPS = 100_000  # loop iterations of one trace before a rule is declared stuck


def literal(value: Any) -> str:
  """How a value prints in a trace: its Python literal."""
  return repr(value)


class _Code:
  """A compiled expression. One holding a comprehension runs with the rule's variables as
  globals: a comprehension is a nested scope, which does not see eval's locals."""

  def __init__(self, node: ast.expr):
    self.code = compile(ast.Expression(node), "<rule>", "eval")
    self.scoped = any(isinstance(n, _SCOPES) for n in ast.walk(node))

  def __call__(self, env: dict[str, Any]) -> Any:
    # pylint: disable=eval-used  (rule code only)
    return eval(self.code, {**_GLOBALS, **env}) if self.scoped else eval(self.code, _GLOBALS, env)


class _Expr:
  """An expression compiled once: its value, and how it reads with values substituted."""

  def __init__(self, node: ast.expr):
    self.value = _Code(node)
    self.constant = _is_literal(node)
    self.template, self.atoms = None, ()
    if isinstance(node, _ATOMS):
      return  # shown by its value alone
    atoms = []

    class Substitute(ast.NodeTransformer):
      def visit(self, n):
        if isinstance(n, _ATOMS):
          atoms.append(_Code(n))
          return ast.Name(id=f"__atom{len(atoms) - 1}__", ctx=ast.Load())
        return self.generic_visit(n)

    text = ast.unparse(Substitute().visit(copy.deepcopy(node)))
    text = text.replace("{", "{{").replace("}", "}}")
    self.template = _PLACEHOLDER.sub(lambda m: "{" + m.group(1) + "}", text)
    self.atoms = tuple(atoms)

  def shown(self, env: dict[str, Any]) -> str | None:
    """The expression with its variables, calls and subscripts replaced by their values;
    None when the expression is a single such atom (its value says it all)."""
    if self.template is None:
      return None
    return self.template.format(*(literal(atom(env)) for atom in self.atoms))

  def check(self, env: dict[str, Any]) -> tuple[bool, str]:
    """A loop or branch test: its truth and `<shown> is True|False`."""
    value = self.value(env)
    return bool(value), f"{self.shown(env) or literal(value)} is {bool(value)}"


def _is_literal(node: ast.expr) -> bool:
  try:
    ast.literal_eval(node)
  except ValueError:
    return False
  return True


def _result(shown: str | None, value: Any) -> str:
  """`shown = value`, or just the value when showing the expression adds nothing."""
  value_text = literal(value)
  return value_text if shown is None or shown == value_text else f"{shown} = {value_text}"


class _Counter:
  """Loop iterations of one trace, so that a rule that never stops fails loudly."""

  def __init__(self):
    self.steps = 0

  def tick(self, rule_name: str) -> None:
    self.steps += 1
    if self.steps > MAX_LOOP_STEPS:
      raise RuntimeError(f"rule {rule_name} ran {MAX_LOOP_STEPS} loop iterations; its loop "
                         "does not terminate on these arguments")


_CONTINUE = object()  # a step that did not return


def _assign(out: list[str], env: dict[str, Any], targets: tuple[str, ...], value: Any) -> None:
  """Binds a tuple target (one line per name) or a single name."""
  if len(targets) == 1:
    env[targets[0]] = value
    out.append(f"{targets[0]} = {literal(value)}")
    return
  values = tuple(value)
  if len(values) != len(targets):
    raise ValueError(f"cannot unpack {literal(value)} into {', '.join(targets)}")
  for name, v in zip(targets, values):
    env[name] = v
    out.append(f"{name} = {literal(v)}")


@dataclasses.dataclass(frozen=True)
class _Assignment:
  targets: tuple[str, ...]
  expr: _Expr


@dataclasses.dataclass(frozen=True)
class _Block:
  """Straight-line assignments shown as one code block."""
  code: str
  assignments: tuple[_Assignment, ...]

  def run(self, env, out, counter):
    out += [FENCE, self.code, FENCE]
    for a in self.assignments:
      if len(a.targets) > 1:
        _assign(out, env, a.targets, a.expr.value(env))
        continue
      shown, value = a.expr.shown(env), a.expr.value(env)
      env[a.targets[0]] = value
      if not a.expr.constant:  # `carry = 0` says it all in the code above
        out.append(f"{a.targets[0]} = {_result(shown, value)}")
    return _CONTINUE


@dataclasses.dataclass(frozen=True)
class _Call:
  """`targets = callee(args)` or `return callee(args)`: the callee's whole trace, nested."""
  code: str
  targets: tuple[str, ...]  # () for a return
  callee: str
  args: tuple[_Expr, ...]

  def run(self, env, out, counter):
    out += [FENCE, self.code, FENCE, f"enter function: {self.callee}"]
    value = _execute(self.callee, [a.value(env) for a in self.args], out, counter)
    out.append(f"exit function: {self.callee}")
    if not self.targets:
      out.append(f"return {literal(value)}")
      return value
    _assign(out, env, self.targets, value)
    return _CONTINUE


@dataclasses.dataclass(frozen=True)
class _Return:
  code: str
  expr: _Expr

  def run(self, env, out, counter):
    value = self.expr.value(env)
    out += [FENCE, self.code, FENCE, f"return {_result(self.expr.shown(env), value)}"]
    return value


@dataclasses.dataclass(frozen=True)
class _While:
  rule: str
  code: str
  test: _Expr
  body: tuple

  def run(self, env, out, counter):
    while True:
      counter.tick(self.rule)
      value, text = self.test.check(env)
      out += [FENCE, self.code, FENCE, f"check the stop criterion: {text}"]
      if not value:
        out.append("end the loop")
        return _CONTINUE
      out.append("enter the loop")
      result = _run(self.body, env, out, counter)
      if result is not _CONTINUE:
        return result


@dataclasses.dataclass(frozen=True)
class _If:
  code: str
  test: _Expr
  body: tuple
  orelse: tuple  # the else branch's steps; for `elif`, the one _If step of that test
  elif_: bool

  def run(self, env, out, counter):
    value, text = self.test.check(env)
    out += [FENCE, self.code, FENCE, f"check the condition: {text}"]
    if value:
      out.append("enter the branch")
      return _run(self.body, env, out, counter)
    if not self.orelse or self.elif_:
      out.append("skip the branch")
      return _run(self.orelse, env, out, counter)
    out.append("enter the else branch")
    return _run(self.orelse, env, out, counter)


def _run(steps: tuple, env, out, counter):
  for step in steps:
    result = step.run(env, out, counter)
    if result is not _CONTINUE:
      return result
  return _CONTINUE


@dataclasses.dataclass(frozen=True)
class Rule:
  """A registered rule: its prompt text (`source`) and its compiled steps."""
  name: str
  function: Callable[..., Any]
  source: str
  params: tuple[str, ...]
  steps: tuple
  callees: tuple[str, ...]  # rules it calls directly, in source order


_RULES: dict[str, Rule] = {}


def rule(function: Callable[..., Any]) -> Callable[..., Any]:
  """Registers `function` as a rule (it stays an ordinary, callable function)."""
  if function.__name__ in _RULES:
    raise ValueError(f"rule {function.__name__} registered twice")
  _RULES[function.__name__] = _Compiler(function).compile()
  return function


def get(name: str) -> Rule:
  if name not in _RULES:
    raise ValueError(f"unknown rule {name!r}; known: {', '.join(sorted(_RULES))}")
  return _RULES[name]


def names() -> list[str]:
  """Every registered rule, in registration order."""
  return list(_RULES)


def with_helpers(name: str) -> list[Rule]:
  """The rule and every rule it calls, directly or not, each once, in first-call order."""
  out, seen, stack = [], set(), [name]
  while stack:
    current = stack.pop()
    if current in seen:
      continue
    seen.add(current)
    r = get(current)
    out.append(r)
    stack.extend(reversed(r.callees))
  return out


def _execute(name: str, args: Sequence[Any], out: list[str], counter: _Counter) -> Any:
  r = get(name)
  if len(args) != len(r.params):
    raise ValueError(f"rule {name} takes {len(r.params)} arguments, got {len(args)}")
  env = dict(zip(r.params, args))
  out.extend(f"{p} = {literal(v)}" for p, v in env.items())
  result = _run(r.steps, env, out, counter)
  if result is _CONTINUE:
    raise ValueError(f"rule {name} ended without a return")
  return result


def trace(name: str, args: Sequence[Any]) -> tuple[Any, list[str]]:
  """(value, lines): the result of rule `name` on `args` and the trace of computing it."""
  out: list[str] = []
  return _execute(name, args, out, _Counter()), out


class _Compiler:
  """Turns a rule function's source into steps, rejecting what the tracer cannot show."""

  def __init__(self, function: Callable[..., Any]):
    self.name = function.__name__
    raw = textwrap.dedent(inspect.getsource(function)).splitlines()
    definition = ast.parse("\n".join(raw)).body[0]
    # The prompt shows the function from its `def` line: decorators are not part of the rule.
    self.lines = raw[definition.lineno - 1:definition.end_lineno]
    self.tree = ast.parse("\n".join(self.lines)).body[0]
    self.function = function
    self.calls: list[ast.Call] = []

  def error(self, node: ast.AST, message: str) -> ValueError:
    return ValueError(f"rule {self.name}, line {node.lineno}: {message}")

  def compile(self) -> Rule:
    args = self.tree.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
      raise self.error(self.tree, "a rule takes plain positional parameters only")
    steps = self.body(self.tree.body)
    allowed = {id(c) for c in self.calls}
    for node in ast.walk(self.tree):
      if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id not in BUILTINS and id(node) not in allowed):
        raise self.error(node, f"call {node.func.id}() only as the whole value of an "
                               "assignment or a return, so that its trace can be shown")
    return Rule(self.name, self.function, "\n".join(self.lines),
                tuple(a.arg for a in args.args), steps,
                tuple(dict.fromkeys(c.func.id for c in self.calls)))

  def code(self, first: ast.stmt, last: ast.stmt | None = None) -> str:
    last = last or first
    return textwrap.dedent("\n".join(self.lines[first.lineno - 1:last.end_lineno]))

  def header(self, node: ast.stmt) -> str:
    return self.lines[node.lineno - 1].strip()

  def blank_between(self, before: ast.stmt, after: ast.stmt) -> bool:
    return any(not line.strip() for line in self.lines[before.end_lineno:after.lineno - 1])

  def rule_call(self, stmt: ast.stmt) -> ast.Call | None:
    value = getattr(stmt, "value", None)
    if (isinstance(stmt, (ast.Assign, ast.Return)) and isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name) and value.func.id not in BUILTINS):
      if value.keywords:
        raise self.error(stmt, "pass a rule's arguments by position")
      self.calls.append(value)
      return value
    return None

  def targets(self, stmt: ast.Assign) -> tuple[str, ...]:
    if len(stmt.targets) != 1:
      raise self.error(stmt, "assign one target at a time")
    target = stmt.targets[0]
    if isinstance(target, ast.Name):
      return (target.id,)
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
      return tuple(e.id for e in target.elts)
    raise self.error(stmt, "assign to a name or a tuple of names")

  def assignment(self, stmt: ast.stmt) -> _Assignment:
    if isinstance(stmt, ast.AugAssign):  # x += e reads as x = x + e
      if not isinstance(stmt.target, ast.Name):
        raise self.error(stmt, "update a name")
      value = ast.BinOp(ast.Name(stmt.target.id, ast.Load()), stmt.op, stmt.value)
      return _Assignment((stmt.target.id,), _Expr(ast.fix_missing_locations(
          ast.copy_location(value, stmt))))
    return _Assignment(self.targets(stmt), _Expr(stmt.value))

  def body(self, stmts: list[ast.stmt]) -> tuple:
    steps, group = [], []

    def flush():
      if group:
        steps.append(_Block(self.code(group[0], group[-1]),
                            tuple(self.assignment(s) for s in group)))
        group.clear()

    for stmt in stmts:
      call = self.rule_call(stmt)
      if isinstance(stmt, (ast.Assign, ast.AugAssign)) and call is None:
        if group and self.blank_between(group[-1], stmt):
          flush()
        group.append(stmt)
        continue
      flush()
      steps.append(self.compound(stmt, call))
    flush()
    return tuple(steps)

  def compound(self, stmt: ast.stmt, call: ast.Call | None):
    if call is not None:
      targets = () if isinstance(stmt, ast.Return) else self.targets(stmt)
      return _Call(self.code(stmt), targets, call.func.id,
                   tuple(_Expr(a) for a in call.args))
    if isinstance(stmt, ast.Return):
      if stmt.value is None:
        raise self.error(stmt, "return a value")
      return _Return(self.code(stmt), _Expr(stmt.value))
    if isinstance(stmt, ast.While):
      if stmt.orelse:
        raise self.error(stmt, "while ... else is not supported")
      return _While(self.name, self.header(stmt), _Expr(stmt.test), self.body(stmt.body))
    if isinstance(stmt, ast.If):
      is_elif = (len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If)
                 and self.header(stmt.orelse[0]).startswith("elif"))
      return _If(self.header(stmt), _Expr(stmt.test), self.body(stmt.body),
                 self.body(stmt.orelse), is_elif)
    raise self.error(stmt, f"{type(stmt).__name__} statements are not supported; use "
                           "assignments, if, while and return")
