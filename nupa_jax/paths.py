"""Run files on a local disk or in a bucket (`gs://bucket/run`), through one path library.

Every file of a run (config, log, evaluations, checkpoints, what the report reads) is named by
an `etils.epath.Path`: a pathlib-like object for local paths and, for `gs://` URLs, the same
methods over fsspec (`gcsfs`), so a pod writes its workdir straight to Cloud Storage without a
mounted file system. Orbax takes the same paths for checkpoints (over tensorstore).

Object stores differ from disks in two ways that matter here: an object is written whole or
not at all (so `write_text_atomic` needs no temporary file there), and it cannot be appended
to (so `AppendedFile` keeps a remote file's contents and rewrites the object at each flush).
"""
from __future__ import annotations

import os
import pathlib

from etils import epath

Path = epath.Path


def path(location: str | os.PathLike) -> epath.Path:
  """`location` (a local path or a `gs://` URL) as a path object."""
  return epath.Path(location)


def is_remote(location: str | os.PathLike) -> bool:
  """Whether `location` is a URL (`gs://...`) rather than a local path."""
  return "://" in os.fspath(location)


def check_file_system(location: str | os.PathLike) -> None:
  """Raises if a URL's file system is not installed (ImportError naming the package, gcsfs for
  `gs://`) or not known (ValueError); asks no server. A local path always passes."""
  if is_remote(location):
    import fsspec  # pylint: disable=g-import-not-at-top  (epath's backend for URLs)
    fsspec.get_filesystem_class(os.fspath(location).split("://", 1)[0])


def absolute(location: str | os.PathLike) -> epath.Path:
  """A local path resolved (orbax wants absolute directories); a URL as it is."""
  return path(location) if is_remote(location) else path(location).resolve()


def write_text_atomic(target: epath.Path, text: str) -> None:
  """Writes `text` so that a reader, or a run killed mid-write, never sees half of it: a local
  file through a temporary file and a rename, an object in one upload."""
  if is_remote(target):
    target.write_text(text)
    return
  tmp = target.with_name(target.name + ".tmp")
  tmp.write_text(text)
  tmp.replace(target)


class AppendedFile:
  """A file grown by `write`s that reach storage at each `flush` (bytes or UTF-8 text).

  Local files are opened for appending. Objects cannot be appended to, so a remote file's
  contents (those it already has, then every write) stay in memory and each flush uploads them
  whole: a run killed between flushes loses only what it wrote since the last one.
  """

  def __init__(self, target: str | os.PathLike):
    self.path = path(target)
    self._remote = is_remote(self.path)
    self._file = None
    self._contents = bytearray()
    self._unflushed = False
    if self._remote:
      if self.path.exists():
        self._contents += self.path.read_bytes()
    else:
      self.path.parent.mkdir(parents=True, exist_ok=True)
      self._file = self.path.open("ab")

  def write(self, data: str | bytes) -> None:
    data = data.encode() if isinstance(data, str) else data
    if self._remote:
      self._contents += data
      self._unflushed = True
    else:
      self._file.write(data)

  def flush(self) -> None:
    if self._remote and self._unflushed:
      self.path.write_bytes(bytes(self._contents))
      self._unflushed = False
    elif self._file is not None:
      self._file.flush()

  def close(self) -> None:
    self.flush()
    if self._file is not None:
      self._file.close()
      self._file = None


def upload_tree(local: str | os.PathLike, target: str | os.PathLike) -> None:
  """Copies every file under the local folder `local` to the same relative names under
  `target` (for writers, such as safetensors', that need a local file first)."""
  local = pathlib.Path(local)
  target = path(target)
  for source in sorted(local.rglob("*")):
    if source.is_file():
      destination = target / source.relative_to(local).as_posix()
      destination.parent.mkdir(parents=True, exist_ok=True)
      destination.write_bytes(source.read_bytes())
