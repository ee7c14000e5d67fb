"""Loss curves in the report: training loss per logged step and validation loss per
evaluation, one line per setting with its seeds as a min-max band, against samples seen.

Run folders are written by hand here, with losses chosen so that every median and band bound
is known in advance."""
import json
import pathlib

import pytest
from matplotlib.collections import PolyCollection

from nupa_jax.report import figures, loading
from nupa_jax.report.build import make_report
from nupa_jax.report.grouping import group_entries
from nupa_jax.report.series import Band, loss_series
from report_synthetic import task_json, write_json

SAMPLES_PER_STEP = 32
# (pe, seed) -> training loss at steps 10, 20, 30; validation loss at steps 20 (eval file) and
# 30 (an `eval` event of the log only: a run that evaluated no test questions then).
TRAIN = {("rope", 0): (2.0, 1.0, 0.5), ("rope", 1): (3.0, 0.5, 0.25),
         ("alibi", 0): (4.0, 2.0, 1.0)}
VAL = {("rope", 0): (0.8, 0.4), ("rope", 1): (0.6, 0.2), ("alibi", 0): (1.6, 1.2)}


def make_logged_run(workdir: pathlib.Path, pe: str, seed: int, samples: bool = True) -> None:
  write_json(workdir / "config.json", {"seed": seed, "model": {"posenc": {"name": pe}},
                                       "data": {"tasks": {"add_int": 1.0}}})
  result = {"add_int": task_json(lambda d: 0.5)}
  result["_meta"] = {"step": 20, "val_loss": VAL[pe, seed][0]}
  write_json(workdir / "eval" / "step_20.json", result)
  write_json(workdir / "eval" / "latest.json", result)

  def logged(step, loss):
    return {"step": step, "loss": loss} | (
        {"samples_seen": SAMPLES_PER_STEP * step} if samples else {})

  losses = dict(zip((10, 20, 30), TRAIN[pe, seed]))
  lines = [logged(10, 9.0),  # replaced by the resumed run's line for step 10 below
           {"event": "resume", "step": 0}, logged(10, losses[10]), logged(20, losses[20]),
           {"event": "eval", "step": 20, "val_loss": VAL[pe, seed][0]},
           logged(30, losses[30]), {"event": "eval", "step": 30, "val_loss": VAL[pe, seed][1]}]
  (workdir / "train_metrics.jsonl").write_text(
      "\n".join(map(json.dumps, lines)) + '\n{"step": 40, "lo')  # torn by a kill


@pytest.fixture
def sweep(tmp_path):
  runs = []
  for pe, seed in TRAIN:
    name = f"{pe}-s{seed}"
    make_logged_run(tmp_path / "sweep" / name, pe, seed)
    runs.append({"name": name, "workdir": name, "args": {"pe": pe, "seed": seed},
                 "status": "done"})
  write_json(tmp_path / "sweep" / "sweep.json", {"runs": runs})
  return tmp_path / "sweep"


def _groups(*paths):
  return group_entries(loading.load(list(paths), log=lambda _: None))


def test_seeds_of_a_setting_give_median_and_band_per_step(sweep):
  rope, alibi = _groups(sweep)
  assert (rope.label, alibi.label) == ("pe=rope", "pe=alibi")
  assert loss_series(rope, "train") == [(10, 320, Band(2.5, 2.0, 3.0, 2)),
                                        (20, 640, Band(0.75, 0.5, 1.0, 2)),
                                        (30, 960, Band(0.375, 0.25, 0.5, 2))]
  assert loss_series(rope, "val") == [(20, 640, Band(0.7, 0.6, 0.8, 2)),
                                      (30, 960, Band(0.30000000000000004, 0.2, 0.4, 2))]
  assert loss_series(alibi, "train") == [(10, 320, Band(4.0, 4.0, 4.0, 1)),
                                         (20, 640, Band(2.0, 2.0, 2.0, 1)),
                                         (30, 960, Band(1.0, 1.0, 1.0, 1))]


def test_a_scored_report_has_no_loss_series(tmp_path):
  path = write_json(tmp_path / "REPORT.json", {"add_int": task_json(lambda d: 0.5)})
  (group,) = _groups(path)
  assert loss_series(group, "train") == [] and loss_series(group, "val") == []


@pytest.fixture
def drawn(monkeypatch):
  """The figures plot_losses would save, kept for inspection instead."""
  kept = []
  monkeypatch.setattr(figures, "_save", lambda fig, stem: kept.append(fig) or [stem])
  return kept


def _lines(ax):
  return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
          for line in ax.get_lines()}


def _band_bounds(collection: PolyCollection) -> dict[float, tuple[float, float]]:
  """{x: (lower, upper)} of a fill_between band, read from its polygon's vertices."""
  bounds = {}
  for x, y in collection.get_paths()[0].vertices:
    lo, hi = bounds.get(x, (y, y))
    bounds[x] = (min(lo, y), max(hi, y))
  return bounds


def test_sweep_figure_draws_one_line_per_setting_and_a_band_for_seeds(sweep, drawn):
  assert figures.plot_losses(_groups(sweep), pathlib.Path("losses"))
  train, val = drawn[0].axes[:2]
  assert (train.get_title(), val.get_title()) == ("training loss", "validation loss")
  assert train.get_xlabel() == "samples seen" and train.get_yscale() == "log"
  assert _lines(train) == {"pe=rope (2 seeds)": ([320, 640, 960], [2.5, 0.75, 0.375]),
                           "pe=alibi": ([320, 640, 960], [4.0, 2.0, 1.0])}
  assert _lines(val)["pe=rope (2 seeds)"] == ([640, 960], [0.7, 0.30000000000000004])
  (band,) = [c for c in train.collections if isinstance(c, PolyCollection)]  # rope only
  assert _band_bounds(band) == {320: (2.0, 3.0), 640: (0.5, 1.0), 960: (0.25, 0.5)}


def test_single_run_is_one_line_without_band(sweep, drawn):
  figures.plot_losses(_groups(sweep / "alibi-s0"), pathlib.Path("losses"))
  train, val = drawn[0].axes[:2]
  assert _lines(train) == {"pe=alibi, task=add_int": ([320, 640, 960], [4.0, 2.0, 1.0])}
  assert _lines(val) == {"pe=alibi, task=add_int": ([640, 960], [1.6, 1.2])}
  assert not [c for c in train.collections if isinstance(c, PolyCollection)]


def test_lines_past_the_palette_differ_in_dash_pattern(tmp_path, drawn):
  runs = [tmp_path / f"run{k}" for k in range(12)]
  for k, run in enumerate(runs):
    make_logged_run(run, "alibi", 0)
    write_json(run / "config.json", {"seed": 0, "model": {"posenc": {"name": f"pe{k}"}},
                                     "data": {"tasks": {"add_int": 1.0}}})
  figures.plot_losses(_groups(*runs), pathlib.Path("losses"))
  lines = drawn[0].axes[0].get_lines()
  looks = [(line.get_color(), line.get_linestyle()) for line in lines]
  assert len(looks) == 12 and len(set(looks)) == 12
  assert looks[10][0] == looks[0][0] and looks[10][1] != looks[0][1]  # colour reused, dashed


def test_without_samples_seen_the_curves_are_drawn_by_step(tmp_path, drawn):
  make_logged_run(tmp_path / "run", "rope", 0, samples=False)
  figures.plot_losses(_groups(tmp_path / "run"), pathlib.Path("losses"))
  train = drawn[0].axes[0]
  assert train.get_xlabel() == "training step"
  assert _lines(train) == {"pe=rope, task=add_int": ([10, 20, 30], [2.0, 1.0, 0.5])}


def test_report_writes_the_loss_figure_its_data_and_an_index_section(sweep, tmp_path):
  out = tmp_path / "out"
  index = make_report([sweep], out, log=lambda _: None).read_text()
  assert "## Training and validation loss vs samples seen" in index
  assert "(figures/losses.png)" in index and "(tables/losses.csv)" in index
  assert (out / "figures" / "losses.svg").is_file()
  rows = (out / "tables" / "losses.csv").read_text().splitlines()
  assert rows[0] == "line,loss,step,samples_seen,median,min,max,seeds"
  assert "pe=rope,train,20,640.0,0.75,0.5,1.0,2" in rows
  assert "pe=rope,val,30,960.0,0.30000000000000004,0.2,0.4,2" in rows
  assert "pe=alibi,val,30,960.0,1.2,1.2,1.2,1" in rows
  assert len(rows) == 1 + 2 * 3 + 2 * 2  # (train steps + val steps) x settings
