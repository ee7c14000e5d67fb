"""Usage errors of the command-line tools: one line on stderr that names the fix, status 2.

Every entry point (`nupa_jax.train`, `evaluate`, `evaluate_llm`, `benchmark`, `report` and
`launch/sweep.py`) reports what the user typed wrong here, the same way: a config field that
does not exist (with the nearest name), a config argument or name the config rejects, a path
that is a file where a directory is needed or a directory it cannot write in. Status 2 (as
argparse's own usage errors) tells a command line that cannot run from a run that diverged
(`DIVERGED`), met a training question it cannot make (`DATA_ERROR`), failed (1) or was stopped
(130 / 143), so scripts and schedulers can stop retrying it.
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib.util
import os
import pathlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import NoReturn

import ml_collections
from absl import flags
from ml_collections import config_flags
from ml_collections.config_flags.config_flags import is_config_flag

from nupa_jax import paths

USAGE = 2  # the exit status of every usage error
DIVERGED = 3  # nupa_jax.train's when the loss became non-finite: a rerun diverges again
DATA_ERROR = 4  # nupa_jax.train's when a question of its data cannot be made: a rerun stops there
# Errors of a path the user gave: raised by the file system, reported as usage errors by the
# tools whose inputs and outputs are paths.
PATH_ERRORS = (FileNotFoundError, NotADirectoryError, FileExistsError, IsADirectoryError,
               PermissionError)


class UsageError(ValueError):
  """A command line that cannot run; the message says what to change."""


def fail(message: str, label: str = "error") -> NoReturn:
  """Prints `label: message` on one line of stderr and exits with status 2."""
  print(f"{label}: {' '.join(str(message).split())}", file=sys.stderr, flush=True)
  raise SystemExit(USAGE)


def _message(error: BaseException) -> str:
  if isinstance(error, OSError) and error.filename is not None and error.strerror:
    return f"{error.filename}: {error.strerror}"
  return str(error)


@contextlib.contextmanager
def usage_errors(*kinds: type[BaseException], label: str = "error") -> Iterator[None]:
  """Turns a `UsageError` or an error of `kinds` raised inside into `fail`."""
  try:
    yield
  except (UsageError, *kinds) as e:
    fail(_message(e), label)


def output_dir(path: str | os.PathLike, flag: str,
               remote: bool = True) -> str | os.PathLike:
  """`path` as a directory the tool can create or write in, checked before any work; the
  UsageError names `flag` and what is in the way. A URL (`gs://...`) needs its file system
  installed; the bucket itself is not asked (its permissions show at the first write). Tools
  that write only local files pass `remote=False`, and a URL is refused."""
  if paths.is_remote(path) and not remote:
    raise UsageError(f"{flag} {path}: this command writes a local folder; give a local path "
                     "(copy the result to a bucket afterwards)")
  if paths.is_remote(path):
    try:
      paths.check_file_system(path)
    except (ImportError, ValueError) as e:  # fsspec's message names the package to install
      raise UsageError(f"{flag} {path}: {e}") from e
    return path
  path = pathlib.Path(path)
  existing = path
  while not existing.exists() and existing != existing.parent:
    existing = existing.parent
  if not existing.is_dir():
    where = "is a file" if existing == path else f"is under a file, {existing}"
    raise UsageError(f"{flag} {path} {where}; give a directory")
  if not os.access(existing, os.W_OK | os.X_OK):
    raise UsageError(f"{flag} {path}: cannot write in {existing} (permission denied); give a "
                     "directory you can write in")
  return path


class ArgumentParser(argparse.ArgumentParser):
  """argparse, its usage errors (a missing or unknown option, a bad choice) on one line."""

  def error(self, message: str) -> NoReturn:
    fail(f"{message} (see {self.prog} --help)")


# --- ml_collections config flags: `--config=FILE.py[:ARGS] [--config.a.b=v ...]` -----------

def _config_file(spec: str, flag: str) -> str:
  path = spec.split(":", 1)[0]
  if not os.path.isfile(path):
    raise UsageError(f"{flag}={spec}: no file {path} (run from the repository root, or give "
                     "its path)")
  return path


def load_config(spec: str, flag: str = "--config") -> ml_collections.ConfigDict:
  """The config of `FILE.py[:ARGS]` as `config_flags` builds it (`get_config(ARGS)`), with its
  own error (an unknown name or size) as the UsageError's message."""
  path = _config_file(spec, flag)
  arg = spec.split(":", 1)[1:]
  module_spec = importlib.util.spec_from_file_location(f"{flag.strip('-')}_config", path)
  module = importlib.util.module_from_spec(module_spec)
  module_spec.loader.exec_module(module)
  try:
    return module.get_config(*arg)
  except (ValueError, TypeError, KeyError) as e:
    raise UsageError(f"{flag}={spec}: {_message(e)}") from e


def missing_field(config: ml_collections.ConfigDict | Mapping, path: str) -> str | None:
  """Why the dotted `path` is not a field of `config` (with the nearest name), or None."""
  node, walked = config, []
  for key in path.split("."):
    if not isinstance(node, (ml_collections.ConfigDict, Mapping)):
      return f"config field {'.'.join(walked)} is a value, not a group: it has no field {key}"
    if key not in node:
      prefix = "".join(f"{k}." for k in walked)
      names = [str(k) for k in node.keys()]
      close = difflib.get_close_matches(key, names, n=1)
      hint = (f"did you mean {prefix}{close[0]}?" if close
              else f"fields of {prefix.rstrip('.') or 'the config'}: {', '.join(names)}")
      return f"config has no field {prefix}{key}; {hint}"
    node, walked = node[key], walked + [key]
  return None


def _config_args(argv: Sequence[str],
                 values: flags.FlagValues) -> Iterator[tuple[str, str, list[str]]]:
  """(flag name, spec, overridden field paths) of each config flag given in `argv`."""
  for name in values:
    if not is_config_flag(values[name]):
      continue
    spec, fields = None, []
    for i, arg in enumerate(argv):
      flag, sep, value = arg.partition("=")
      if flag == f"--{name}":
        spec = value if sep else (argv[i + 1] if i + 1 < len(argv) else None)
      elif flag.startswith(f"--{name}."):
        fields.append(flag[len(name) + 3:])
    if spec is not None:
      yield name, spec, fields


def _flag_error(error: Exception, argv: Sequence[str], values: flags.FlagValues) -> str:
  """One line for an error of parsing `argv`: a config's own problem first (its file, its
  arguments, the fields its overrides name), else the flag library's message."""
  for name, spec, fields in _config_args(argv, values):
    try:
      config = load_config(spec, f"--{name}")
    except UsageError as e:
      return str(e)
    for field in fields:
      problem = missing_field(config, field)
      if problem:
        return problem
  if "\n" in str(error):  # a traceback inside: the first error's own message
    while (error.__cause__ or error.__context__) is not None:
      error = error.__cause__ or error.__context__
  return _message(error)


def parse_flags(argv: Sequence[str], values: flags.FlagValues | None = None) -> list[str]:
  """Parses absl flags (`app.run(main, flags_parser=cli.parse_flags)`), a command line that
  does not parse failing with one line and status 2 instead of a traceback and status 1."""
  values = flags.FLAGS if values is None else values
  try:
    remaining = values(list(argv))
  except (flags.Error, AttributeError, KeyError, OSError) as e:
    fail(_flag_error(e, argv, values))
  with usage_errors():  # config_flags defers a missing file's error to the config's first use
    for name, spec, _ in _config_args(argv, values):
      _config_file(spec, f"--{name}")
  return remaining


def check_config_args(args: Sequence[str]) -> ml_collections.ConfigDict:
  """The config that `--config=... --config.a.b=v ...` (the trainer's flags) give, parsed as
  `nupa_jax.train` parses them; a UsageError names the first problem."""
  argv = ["check", *args]
  values = flags.FlagValues()
  holder = config_flags.DEFINE_config_file("config", None, "", flag_values=values,
                                           lock_config=True, sys_argv=argv)
  _config_file(next(spec for _, spec, _ in _config_args(argv, values)), "--config")
  try:
    values(argv)
  except (flags.Error, AttributeError, KeyError, OSError) as e:
    raise UsageError(_flag_error(e, argv, values)) from e
  return holder.value
