"""Which runs are seeds of one setting, and what to call each setting.

A sweep of pe x task x seed should read as one line per (pe, task), its seeds drawn as a band,
and each line named by what sets it apart (`pe=alibi`), not by a folder name. Settings come
from the sweep's grid arguments when every run has them (short and exactly what the user
varied), else from the flattened `config.json`; any key whose last component is `seed` tells
replicas apart instead of settings.
"""
import dataclasses
import json
from typing import Any

from nupa_jax.report.loading import Entry, ReportError

# The ablation variables of the paper's experiment families (configs/*.py), shown under the
# names those configs' argument strings use. When runs differ in more than MAX_KEYS config
# fields (not a controlled ablation), only these name them; if they don't tell the runs
# apart, the run folders do.
SHORT_NAMES = {
    "model.posenc.name": "pe",
    "text.tokenizer.name": "tokenizer",
    "text.tokenizer.k": "k",
    "text.tokenizer.align": "align",
    "text.format.reverse": "reverse",
    "text.format.pad": "pad",
    "text.format.index_hints": "hints",
    "model.posenc.reward_distance": "reward_distance",
    "model.posenc.random_positions": "random_positions",
    "data.loss_on_padding": "loss_on_padding",
    "model.preset": "size",
    "model.num_layers": "layers",
    "model.hidden": "hidden",
    "data.tasks": "task",
    "data.train_digits": "train_digits",
    "init_from": "init_from",
}
MAX_KEYS = 3


# Config fields that change how fast a run goes, never what it computes: runs differing only in
# these are the same setting (data is a pure function of (seed, index), whatever the workers;
# the optimizer state's placement changes the float order of a gradient sum; fused projections,
# per-layer parameter splits, the GEMM backend and several steps in one program change float
# rounding, no more; where the collectives are scheduled, nothing).
NOT_SETTINGS = frozenset({"data.num_workers", "data.device_prefetch", "data.stacked_transfer",
                          "train.log_every", "checkpoint.async_save", "checkpoint.every",
                          "checkpoint.keep", "eval.batch_size", "mesh.shard_optimizer_over_data",
                          "model.fused_projections", "model.split_layers",
                          "model.cudnn_segments", "model.attention_span",
                          "train.gpu_triton_gemm", "train.gpu_overlap_collectives",
                          "train.steps_per_call"})


def is_off(value: Any) -> bool:
  """Whether a setting's value holds its option off (False, 0, ''): how options added after
  some runs were made stand in those made since, left out of labels."""
  return value in (False, 0, "")


def is_seed(key: str) -> bool:
  return key.rsplit(".", 1)[-1] == "seed"


@dataclasses.dataclass(eq=False)  # a group is itself, not its contents
class Group:
  """Runs of one setting (seeds) or one scored report, drawn as one line / one column."""
  label: str
  entries: list[Entry]
  settings: dict[str, Any]  # what all its runs share, seeds left out
  user_label: bool = False

  @property
  def kind(self) -> str:
    return self.entries[0].kind

  @property
  def tasks(self) -> list[str]:
    return list(self.entries[0].final.tasks)

  def train_digits(self, task: str) -> tuple[int, int] | None:
    return self.entries[0].train_digits.get(task)

  @property
  def replicas(self) -> str:
    """`3 seeds`, or `2 runs` when some share their seeds.

    Repeats of one run (two sweeps with a setting in common) measure noise, not the spread
    over seeds, and are named so.
    """
    seeds = {json.dumps({k: v for k, v in e.config.items() if is_seed(k)}, sort_keys=True)
             for e in self.entries}
    noun = "seeds" if len(seeds) == len(self.entries) else "runs"
    return f"{len(self.entries)} {noun}"


def show_value(key: str, value: Any) -> str:
  if key == "data.tasks" and isinstance(value, dict):
    return "+".join(value) if len(value) <= 3 else f"{len(value)} tasks"
  if isinstance(value, str):
    return value
  if (isinstance(value, list) and len(value) == 2
      and all(isinstance(v, int) for v in value)):
    return f"{value[0]}-{value[1]}"
  return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _show(key: str, value: Any) -> str:
  return f"{SHORT_NAMES.get(key, key)}={show_value(key, value)}"


def describe(settings: list[dict[str, Any]]) -> list[str]:
  """`k=v, ...` of the keys whose values differ between the given settings.

  '' for all when none do, or when more than MAX_KEYS do and the SHORT_NAMES keys among them
  can't tell the settings apart. An option added to the config after some runs were made is
  absent from their settings; where every run that has it holds it off (False, 0, ''), it is
  named only if the labels need it to be unique, so that runs from before the option existed
  and runs with it at its off default do not read as a difference.
  """
  keys = list(dict.fromkeys(k for s in settings for k in s))  # config order
  differ = [k for k in keys
            if len({json.dumps(s.get(k), sort_keys=True) for s in settings}) > 1]
  if len(differ) > MAX_KEYS:
    differ = [k for k in differ if k in SHORT_NAMES]

  def texts(shown: list[str]) -> list[str]:
    return [", ".join(_show(k, s[k]) if k in s else f"{SHORT_NAMES.get(k, k)}=-"
                      for k in shown) for s in settings]

  def off_where_present(key: str) -> bool:
    return all(is_off(s[key]) for s in settings if key in s)

  shown = [k for k in differ if not off_where_present(k)]
  for key in differ:
    if len(set(texts(shown))) == len(settings):
      break
    if key not in shown:
      shown = [k for k in differ if k in shown or k == key]
  labels = texts(shown)
  return labels if len(set(labels)) == len(labels) else [""] * len(settings)


def _summary(group: Group, use_args: bool) -> str:
  """A label for the only setting of a report: its named settings (those of SHORT_NAMES not
  held off, as `describe` leaves them out), else its run."""
  keys = list(group.settings) if use_args else [
      k for k in SHORT_NAMES if k in group.settings and not is_off(group.settings[k])]
  return ", ".join(_show(k, group.settings[k]) for k in keys) or group.entries[0].name


def _check_seeds(group: Group) -> None:
  first = group.entries[0]
  for other in group.entries[1:]:
    if set(other.final.tasks) != set(first.final.tasks):
      raise ReportError(
          f"{first.path} and {other.path} differ only in seed but evaluate different tasks "
          f"({', '.join(first.final.tasks)} vs {', '.join(other.final.tasks)}); evaluate both "
          "on the same tasks or report them separately")


def group_entries(entries: list[Entry], labels: list[str] | None = None) -> list[Group]:
  """Seeds of one setting in one group, in order of first appearance, each with a label."""
  runs = [e for e in entries if e.kind == "run"]
  use_args = bool(runs) and all(e.args is not None for e in runs)
  groups: dict[str, Group] = {}
  for index, entry in enumerate(entries):
    if entry.kind == "report":
      groups[f"report {index}"] = Group(entry.name, [entry], {})
      continue
    settings = {k: v for k, v in (entry.args if use_args else entry.config).items()
                if not is_seed(k) and k not in NOT_SETTINGS}
    key = json.dumps(settings, sort_keys=True, default=str)
    if key in groups:
      groups[key].entries.append(entry)
    else:
      groups[key] = Group("", [entry], settings)
  out = list(groups.values())
  for group in out:
    _check_seeds(group)
  run_groups = [g for g in out if g.kind == "run"]
  for group, text in zip(run_groups, describe([g.settings for g in run_groups])):
    group.label = text or (_summary(group, use_args) if len(run_groups) == 1
                           else group.entries[0].name)
  counts = {}
  for group in out:
    counts[group.label] = counts.get(group.label, 0) + 1
  for group in out:
    if counts[group.label] > 1:
      group.label = f"{group.label} ({group.entries[0].name})"
  if labels is not None:
    if len(labels) != len(out):
      found = "; ".join(g.label for g in out)
      raise ReportError(f"--labels gives {len(labels)} labels for {len(out)} lines (seeds of "
                        f"one setting share a line); the lines found are: {found}")
    for group, label in zip(out, labels):
      group.label, group.user_label = label, True
  return out


def panel_labels(groups: list[Group]) -> list[str]:
  """Labels for the groups sharing one panel: only what differs among them (e.g. within one
  task's panel of a pe x task sweep, just `pe=...`); user labels are kept as given."""
  runs = [g for g in groups if g.kind == "run" and not g.user_label]
  if len(runs) < 2:
    return [g.label for g in groups]
  local = dict(zip(map(id, runs), describe([g.settings for g in runs])))
  out = [local.get(id(g)) or g.label for g in groups]
  return out if len(set(out)) == len(out) else [g.label for g in groups]
