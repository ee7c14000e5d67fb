"""Seeds grouped into one setting, labels from config differences, seed statistics."""
import json
import math
import statistics

import pytest

from nupa_jax.report.grouping import describe, group_entries, panel_labels
from nupa_jax.report.loading import ReportError, load
from nupa_jax.report.series import band, curve_series, digit_series
from report_synthetic import make_report_json, make_run, write_json


def quiet(_):
  pass


def test_band_on_constructed_numbers():
  b = band([0.2, 0.9, 0.5])
  assert (b.median, b.lo, b.hi, b.n) == (0.5, 0.2, 0.9, 3)
  b = band([0.1, 0.8, 0.4, 0.3])  # even count: mean of the middle two
  assert (b.median, b.lo, b.hi, b.n) == (0.35, 0.1, 0.8, 4)
  b = band([None, 7.0, math.nan])  # missing seeds are left out
  assert (b.median, b.lo, b.hi, b.n) == (7.0, 7.0, 7.0, 1)
  assert band([]).n == 0 and math.isnan(band([None]).median)


def test_labels_are_the_config_difference(tmp_path):
  for pe in ("rope", "nope", "alibi"):
    make_run(tmp_path / pe, pe=pe)
  groups = group_entries(load([tmp_path / p for p in ("rope", "nope", "alibi")], quiet))
  assert [g.label for g in groups] == ["pe=rope", "pe=nope", "pe=alibi"]


def test_runs_of_unrelated_configs(tmp_path):
  """More than a few fields differ: the ablation variables name the runs, else their folders."""
  def run(name, pe, hidden, steps):
    path = make_run(tmp_path / name, pe=pe)
    config = json.loads((path / "config.json").read_text())
    config["model"]["hidden"] = hidden
    config["train"] = {"steps": steps, "batch_size": steps // 10, "learning_rate": steps * 1e-7,
                       "log_every": steps // 50}
    config["eval"] = {"per_length": steps // 100}
    write_json(path / "config.json", config)
    return path
  paths = [run("a", "rope", 32, 1000), run("b", "nope", 64, 2000)]
  assert [g.label for g in group_entries(load(paths, quiet))] == [
      "pe=rope, hidden=32", "pe=nope, hidden=64"]  # not train.steps, eval.per_length, ...
  paths = [run("c", "rope", 32, 1000), run("d", "rope", 32, 2000)]
  assert [g.label for g in group_entries(load(paths, quiet))] == ["c", "d"]


def test_options_added_later_are_named_only_when_needed():
  """Runs made before a config option existed lack it: at its off default it names a run only
  to tell it apart; switched on it is always named."""
  old_rope, old_alibi = {"pe": "rope"}, {"pe": "alibi"}
  new_alibi = {"pe": "alibi", "lop": False, "flip": True}
  assert describe([old_rope, old_alibi, new_alibi]) == [
      "pe=rope, flip=-", "pe=alibi, flip=-", "pe=alibi, flip=true"]
  new_nope = {"pe": "nope", "flip": False, "lop": False}
  assert describe([old_rope, new_nope]) == ["pe=rope", "pe=nope"]
  assert describe([old_rope, {"pe": "nope", "lop": True}]) == [
      "pe=rope, lop=-", "pe=nope, lop=true"]  # on: a real difference even where pe differs
  assert describe([old_rope, {"pe": "abacus", "max_offset": 100}]) == [
      "pe=rope, max_offset=-", "pe=abacus, max_offset=100"]


def test_runs_from_before_an_option_share_a_line_with_its_default(tmp_path):
  """A seed run after `eval.positions` was added, beside seeds made before it: at its default
  one setting; scored at training position ids, a line of its own."""
  def run(name, seed, **eval_settings):
    path = make_run(tmp_path / name, seed=seed)
    config = json.loads((path / "config.json").read_text())
    if eval_settings:
      config["eval"] = eval_settings
    write_json(path / "config.json", config)
    return path
  old = [run(f"old{s}", s) for s in (0, 1)]
  new = run("new", 2, positions="consecutive")
  groups = group_entries(load(old + [new], quiet))
  assert [(g.label, g.replicas) for g in groups] == [
      ("pe=rope, size=tiny, task=add_int, train_digits=1-8", "3 seeds")]
  diagnostic = run("diag", 3, positions="training")
  for paths in (old + [new, diagnostic], [new, diagnostic] + old):
    groups = group_entries(load(paths, quiet))
    assert sorted((g.label, len(g.entries)) for g in groups) == [
        ("eval.positions=consecutive", 3), ("eval.positions=training", 1)]


def test_format_and_position_ablations_name_their_lines():
  """The reverse x pad table beside RoPE with random position ids: four ablation variables
  differ, more than MAX_KEYS, and all four are needed to tell the lines apart."""
  plain = {"model.posenc.name": "rope", "text.format.reverse": "none", "text.format.pad": False}
  settings = [plain, {**plain, "model.posenc.name": "nope"},
              {**plain, "model.posenc.random_positions": 1024},
              {**plain, "text.format.reverse": "int", "text.format.pad": True}]
  assert describe(settings) == [
      "pe=rope, reverse=none, pad=false, random_positions=-",
      "pe=nope, reverse=none, pad=false, random_positions=-",
      "pe=rope, reverse=none, pad=false, random_positions=1024",
      "pe=rope, reverse=int, pad=true, random_positions=-"]


def test_one_setting_is_named_by_its_settings(tmp_path):
  (group,) = group_entries(load([make_run(tmp_path / "r", pe="fire")], quiet))
  assert group.label == "pe=fire, size=tiny, task=add_int, train_digits=1-8"


def test_seeds_share_a_line_and_give_median_min_max(tmp_path):
  """Three seeds whose exact match is quality x f(d): the line is the median quality's."""
  qualities = {0: 1.0, 1: 0.5, 2: 0.8}
  paths = [make_run(tmp_path / f"{pe}{s}", pe=pe, seed=s, quality=q, steps=(100, 200))
           for pe in ("rope", "alibi") for s, q in qualities.items()]
  groups = group_entries(load(paths, quiet))
  assert [(g.label, len(g.entries)) for g in groups] == [("pe=rope", 3), ("pe=alibi", 3)]
  f = lambda d: 0.9 ** (d / 2)  # the formula make_run uses for its first task
  for d, b in digit_series(groups[0], "add_int", "exact_match"):
    assert b.median == pytest.approx(0.8 * f(d)) and b.n == 3
    assert (b.lo, b.hi) == pytest.approx((0.5 * f(d), 1.0 * f(d)))
  (s100, seen100, bands100), (s200, _, _) = curve_series(groups[1], "add_int", "digit_match")
  assert (s100, seen100, s200) == (100, 3200, 200)
  raw = [(1 + q * 0.5 * f(3)) / 2 for q in qualities.values()]  # step 100 = half quality
  assert bands100[3].median == pytest.approx(statistics.median(raw))
  assert (bands100[3].lo, bands100[3].hi) == pytest.approx((min(raw), max(raw)))


def test_repeats_of_one_seed_are_called_runs(tmp_path):
  """Two sweeps sharing a setting give two runs of one seed: noise, not a seed spread."""
  seeds = [make_run(tmp_path / f"s{s}", seed=s) for s in (0, 1)]
  (group,) = group_entries(load(seeds, quiet))
  assert group.replicas == "2 seeds"
  repeats = [make_run(tmp_path / f"r{i}", pe="nope", seed=0) for i in (0, 1)]
  groups = group_entries(load(seeds + repeats, quiet))
  assert [g.replicas for g in groups] == ["2 seeds", "2 runs"]


def test_curves_use_steps_every_seed_has(tmp_path):
  paths = [make_run(tmp_path / "a", seed=0, steps=(100, 200, 300)),
           make_run(tmp_path / "b", seed=1, steps=(100, 300))]
  (group,) = group_entries(load(paths, quiet))
  assert [step for step, _, _ in curve_series(group, "add_int", "exact_match")] == [100, 300]
  paths.append(make_run(tmp_path / "c", seed=2, steps=(200, 300)))
  (group,) = group_entries(load(paths, quiet))
  assert curve_series(group, "add_int", "exact_match") == []  # one common eval is no curve


def test_sweep_args_label_lines_and_panels(tmp_path):
  """A pe x task sweep: global labels name both; within one task's panel only pe differs."""
  sweep = tmp_path / "sweep"
  runs = []
  for pe in ("rope", "alibi"):
    for task in ("add_int", "add_float"):
      name = f"{pe}-{task}"
      make_run(sweep / name, pe=pe, tasks=(task,))
      runs.append({"name": name, "workdir": name, "args": {"pe": pe, "task": task, "seed": 0},
                   "status": "done"})
  write_json(sweep / "sweep.json", {"runs": runs})
  groups = group_entries(load([sweep], quiet))
  assert [g.label for g in groups] == ["pe=rope, task=add_int", "pe=rope, task=add_float",
                                       "pe=alibi, task=add_int", "pe=alibi, task=add_float"]
  add_int = [g for g in groups if "add_int" in g.tasks]
  assert panel_labels(add_int) == ["pe=rope", "pe=alibi"]


def test_reports_keep_their_names_next_to_runs(tmp_path):
  paths = [make_run(tmp_path / "rope", pe="rope"), make_run(tmp_path / "nope", pe="nope"),
           make_report_json(tmp_path / "gpt.json", "gpt-4o")]
  groups = group_entries(load(paths, quiet))
  assert [g.label for g in groups] == ["pe=rope", "pe=nope", "gpt-4o"]


def test_user_labels(tmp_path):
  paths = [make_run(tmp_path / "rope", pe="rope"), make_run(tmp_path / "nope", pe="nope")]
  groups = group_entries(load(paths, quiet), ["RoPE", "NoPE"])
  assert [g.label for g in groups] == ["RoPE", "NoPE"]
  assert panel_labels(groups) == ["RoPE", "NoPE"]
  with pytest.raises(ReportError, match=r"--labels gives 1 labels for 2 lines.*pe=rope; pe=nope"):
    group_entries(load(paths, quiet), ["RoPE"])


def test_seeds_with_mismatched_tasks(tmp_path):
  paths = [make_run(tmp_path / "s0", seed=0, tasks=("add_int",)),
           make_run(tmp_path / "s1", seed=1, tasks=("add_int", "add_float"))]
  # Same config but for seed needs the same data.tasks: make s1's config claim add_int only.
  config = (tmp_path / "s0" / "config.json").read_text().replace('"seed": 0', '"seed": 1')
  (tmp_path / "s1" / "config.json").write_text(config)
  with pytest.raises(ReportError) as info:
    group_entries(load(paths, quiet))
  message = str(info.value)
  assert str(paths[0]) in message and str(paths[1]) in message
  assert "differ only in seed but evaluate different tasks" in message


def test_seeds_before_and_after_a_knob_was_renamed_are_one_setting(tmp_path):
  """A run saved with the legacy data.seed / data.batch_size / eval.test_seed fields and one
  saved with today's names differ only in seed: one line, two seeds."""
  old = make_run(tmp_path / "old", seed=0)
  config = json.loads((old / "config.json").read_text())
  config["data"] |= {"seed": 0, "batch_size": 0}
  config["eval"] = {"test_seed": 0}
  write_json(old / "config.json", config)
  new = make_run(tmp_path / "new", seed=1)
  config = json.loads((new / "config.json").read_text())
  config["eval"] = {}
  write_json(new / "config.json", config)
  groups = group_entries(load([old, new], quiet))
  assert len(groups) == 1 and groups[0].replicas == "2 seeds"


def test_speed_only_fields_do_not_split_seeds_into_settings(tmp_path):
  """Two seeds run with other grain workers, the optimizer state placed otherwise and other
  parameter layouts and GEMM backend are one setting; a learning rate apart is two."""
  paths = [make_run(tmp_path / f"s{seed}", seed=seed) for seed in (0, 1, 2)]
  for path, fields in zip(paths, ({"data": {"num_workers": 6}, "mesh": {}},
                                  {"data": {"num_workers": 12},
                                   "mesh": {"shard_optimizer_over_data": True},
                                   "model": {"fused_projections": True, "split_layers": True},
                                   "train": {"gpu_triton_gemm": False,
                                             "gpu_overlap_collectives": True}},
                                  {"train": {"learning_rate": 1e-3}})):
    config = json.loads((path / "config.json").read_text())
    for section, values in fields.items():
      config.setdefault(section, {}).update(values)
    (path / "config.json").write_text(json.dumps(config))
  groups = group_entries(load(paths, quiet))
  assert [len(g.entries) for g in groups] == [2, 1]


def test_runs_from_before_the_scoring_rules_existed_read_as_their_defaults(tmp_path):
  """A run saved before config.eval had learned_digits_rule / dlength_rule was scored by the
  rules that are today's defaults: it is a seed of the run that states them, not of the run
  scored by the official rule."""
  paths = [make_run(tmp_path / f"s{seed}", seed=seed) for seed in (0, 1, 2)]
  rules = (None, {"learned_digits_rule": "prefix", "dlength_rule": "parts"},
           {"learned_digits_rule": "official", "dlength_rule": "parts"})
  for path, rule in zip(paths, rules):
    config = json.loads((path / "config.json").read_text())
    config.setdefault("eval", {}).update(rule or {})
    (path / "config.json").write_text(json.dumps(config))
  groups = group_entries(load(paths, quiet))
  assert [[e.path.name for e in g.entries] for g in groups] == [["s0", "s1"], ["s2"]]


def test_runs_from_before_later_options_read_as_what_they_did(tmp_path):
  """Loss over answers only, one pass per batch, every task over eval.digits: what a run
  saved before data.loss_on_padding, train.microbatches and eval.task_digits did; a run that
  turns one of them on is another setting."""
  paths = [make_run(tmp_path / f"s{seed}", seed=seed) for seed in (0, 1, 2)]
  options = ({}, {"data": {"loss_on_padding": False}, "train": {"microbatches": 1},
                  "eval": {"task_digits": {}}},
             {"data": {"loss_on_padding": True}})
  for path, fields in zip(paths, options):
    config = json.loads((path / "config.json").read_text())
    for section in ("data", "train", "eval"):
      config.get(section, {}).pop({"data": "loss_on_padding", "train": "microbatches",
                                   "eval": "task_digits"}[section], None)
    for section, values in fields.items():
      config.setdefault(section, {}).update(values)
    (path / "config.json").write_text(json.dumps(config))
  groups = group_entries(load(paths, quiet))
  assert [[e.path.name for e in g.entries] for g in groups] == [["s0", "s1"], ["s2"]]
