"""What each instruction of an optimized XLA program computes, and which line of code made it.

A profile names kernels by their HLO instruction (`hlo_op` of a trace event, or the kernel's
own name for XLA's fusions: instruction `loop_add_fusion.6` runs as kernel
`loop_add_fusion_6`), which says little by itself. `index(compiled.as_text())` reads the
optimized module: each instruction's opcode, shape and fusion kind, the JAX operation it came
from (`op_name` metadata, with the model's named scopes such as `attention` / `mlp`) and the
innermost source line behind it (the stack-frame tables of the module's text).
"""
from __future__ import annotations

import re
from typing import NamedTuple

_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT )?%?(?P<name>[\w.\-]+) = (?P<shape>\(.*?\)|\S+) (?P<op>[\w\-]+)\((?P<rest>.*)$")
_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


class HloOp(NamedTuple):
  op: str         # opcode, with the fusion kind: "fusion:kLoop", "custom-call:__cublas$gemm"
  shape: str
  jax_op: str     # the JAX operation path of its metadata (named scopes included)
  source: str     # "file.py:line function" of the innermost frame, "" if unknown


def kernel_key(name: str) -> str:
  """The form kernel names take of an instruction name ('.' and '-' become '_')."""
  return re.sub(r"[.\-]", "_", name)


def _tables(text: str) -> dict[str, dict[int, str]]:
  tables, current = {}, None
  for line in text.splitlines():
    if line in _TABLES:
      current = tables.setdefault(line, {})
      continue
    entry = re.match(r"^(\d+) (.*)$", line)
    if current is not None and entry:
      current[int(entry.group(1))] = entry.group(2)
    else:
      current = None
  return tables


def _source(metadata: str, tables: dict[str, dict[int, str]]) -> str:
  old_style = re.search(r'source_file="([^"]*)" source_line=(\d+)', metadata)
  if old_style:
    return f"{old_style.group(1).rsplit('/', 1)[-1]}:{old_style.group(2)}"
  frame = re.search(r"stack_frame_id=(\d+)", metadata)
  try:
    frame_fields = dict(re.findall(r"(\w+)=(\d+)", tables["StackFrames"][int(frame.group(1))]))
    location = dict(re.findall(r"(\w+)=(\d+)",
                               tables["FileLocations"][int(frame_fields["file_location_id"])]))
    file = tables["FileNames"][int(location["file_name_id"])].strip('"').rsplit("/", 1)[-1]
    function = tables["FunctionNames"][int(location["function_name_id"])].strip('"')
  except (AttributeError, KeyError):
    return ""
  return f"{file}:{location['line']} {function.rsplit('.', 1)[-1]}"


def index(text: str) -> dict[str, HloOp]:
  """{kernel_key(instruction name): HloOp} for every instruction of the module's text."""
  tables = _tables(text)
  ops = {}
  for line in text.splitlines():
    match = _INSTRUCTION.match(line)
    if not match:
      continue
    rest, op = match.group("rest"), match.group("op")
    detail = re.search(r"kind=(\w+)|custom_call_target=\"([^\"]+)\"", rest)
    if detail:
      op = f"{op}:{detail.group(1) or detail.group(2)}"
    metadata = re.search(r"metadata=\{([^}]*)\}", rest)
    metadata = metadata.group(1) if metadata else ""
    jax_op = re.search(r'op_name="([^"]*)"', metadata)
    ops[kernel_key(match.group("name"))] = HloOp(
        op, match.group("shape"), jax_op.group(1) if jax_op else "", _source(metadata, tables))
  return ops
