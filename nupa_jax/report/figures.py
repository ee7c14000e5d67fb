"""The paper's figures, drawn with matplotlib's object API on the Agg canvas (no display, no
pyplot state), each saved as PNG and SVG.

- metric vs digit length: one panel per task, one line per setting, the trained range shaded;
- metric vs samples seen: one panel per task, one line per digit length (periodic evals);
- training and validation loss vs samples seen: one line per setting;
- tasks x S/M/L/XL heatmap for a mixed run or a scored model.

Seeds of one setting are drawn as their median with a min-max band.
"""
import math
import pathlib

import matplotlib
from matplotlib import cm, colors
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from nupa_jax.report import scales
from nupa_jax.report.grouping import Group, panel_labels
from nupa_jax.report.loading import BUCKETS
from nupa_jax.report.series import (LOSS_SPLITS, Band, bucket_band, curve_series, digit_series,
                                    loss_series)

FORMATS = ("png", "svg")
MAX_CURVES = 20  # digit lengths drawn per training-curve panel; the CSV keeps them all
_PALETTE = [colors.to_hex(c) for c in cm.tab10.colors]
_DASHES = ("-", "--", ":", "-.")  # past the palette's ten colours, line k gets dash k // 10
_LOSS = scales.Scale("loss", "loss", lambda v: v, "viridis", None)  # drawn as logged
_LEGEND_CHAR_INCHES = 0.06  # a legend character at fontsize 7, estimated (not measured:
                             # measuring text is what makes constrained layout slow)


def _save(fig: Figure, stem: pathlib.Path) -> list[pathlib.Path]:
  """Writes PNG and SVG.

  SVG text stays text (smaller, faster, searchable) rather than glyph paths. Neither file
  carries a date or random ids, so regenerating a report from the same runs rewrites the same
  bytes and version control shows only the figures whose data changed.
  """
  paths = [stem.parent / f"{stem.name}.{fmt}" for fmt in FORMATS]
  with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "nupa_jax"}):
    for path in paths:
      fig.savefig(path, dpi=120, metadata={"Date": None} if path.suffix == ".svg" else None)
  return paths


def _panels(n: int, title: str | None = None) -> tuple[Figure, list[Axes]]:
  """A grid of n panels of fixed size in inches (4 per row).

  Margins are fixed in inches instead of computed by constrained layout, which measures every
  tick label of every panel and takes most of a minute for a 41-task grid.
  """
  cols = min(n, 4)
  rows = math.ceil(n / cols)
  top = 0.9 if title else 0.5
  width, height = 4.2 * cols, 3.3 * rows + top - 0.3
  fig = Figure(figsize=(width, height))
  fig.subplots_adjust(left=0.75 / width, right=1 - 0.2 / width, bottom=0.6 / height,
                      top=1 - top / height, wspace=0.32, hspace=0.5)
  if title:
    fig.suptitle(title, y=1 - 0.15 / height, va="top")
  axes = list(fig.subplots(rows, cols, squeeze=False).flat)
  for ax in axes[n:]:
    ax.set_visible(False)
  return fig, axes[:n]


def _legend_beside(fig: Figure, ax: Axes) -> None:
  """The legend every panel shares, in a column right of the panels, the figure widened by
  its width: inside a panel a long legend hides the lines it names."""
  handles, labels = ax.get_legend_handles_labels()
  extra = 0.5 + _LEGEND_CHAR_INCHES * max(map(len, labels), default=0)
  width, height = fig.get_size_inches()
  fig.set_size_inches(width + extra, height)
  fig.subplots_adjust(left=0.75 / (width + extra), right=1 - (0.2 + extra) / (width + extra))
  fig.legend(handles, labels, loc="center right", fontsize=7, frameon=False)


def _style(index: int) -> tuple[str, str]:
  """(colour, dash) of the index-th line: no two of the first 40 lines look the same."""
  return _PALETTE[index % len(_PALETTE)], _DASHES[index // len(_PALETTE) % len(_DASHES)]


def _draw(ax: Axes, x: list[float], bands: list[Band], scale: scales.Scale, color, label: str,
          seeded: bool, marker: str | None = "o", dash: str = "-") -> None:
  """One median line, and its seeds' min-max band when there are several seeds."""
  ax.plot(x, [scale.transform(b.median) for b in bands], color=color, linestyle=dash,
          label=label, marker=marker if len(x) < 30 else None, markersize=3, linewidth=1.3)
  if seeded:
    ax.fill_between(x, [scale.transform(b.lo) for b in bands],
                    [scale.transform(b.hi) for b in bands], color=color, alpha=0.2, linewidth=0)


def _shade_training(ax: Axes, groups: list[Group], line_colors: list[str], task: str) -> None:
  """Grey when all lines share a training range; each line's colour when they differ."""
  ranges = [(g.train_digits(task), c) for g, c in zip(groups, line_colors)]
  ranges = [(r, c) for r, c in ranges if r is not None]
  if len({r for r, _ in ranges}) == 1:
    (lo, hi), _ = ranges[0]
    ax.axvspan(lo - 0.5, hi + 0.5, color="0.5", alpha=0.15, linewidth=0, label="trained")
    return
  for (lo, hi), c in ranges:
    ax.axvspan(lo - 0.5, hi + 0.5, color=c, alpha=0.08, linewidth=0)


def _limits(ax: Axes, scale: scales.Scale) -> None:
  if scale.limits:
    ax.set_ylim(scale.limits[0] - 0.03, scale.limits[1] + 0.03)
  else:
    ax.set_ylim(bottom=0)


def plot_digits(groups: list[Group], tasks: list[str], metric: str,
                stem: pathlib.Path) -> list[pathlib.Path]:
  """Final-eval metric against digit length: a panel per task, a line per setting."""
  scale = scales.get(metric)
  fig, axes = _panels(len(tasks))
  palette = {}  # label -> (colour, dash), so a label keeps its look in every panel
  shown = []
  for ax, task in zip(axes, tasks):
    present = [g for g in groups if task in g.tasks]
    labels = panel_labels(present)
    line_styles = [palette.setdefault(label, _style(len(palette))) for label in labels]
    _shade_training(ax, present, [color for color, _ in line_styles], task)
    legend = [label if len(g.entries) == 1 else f"{label} ({g.replicas})"
              for g, label in zip(present, labels)]
    for group, text, (color, dash) in zip(present, legend, line_styles):
      series = digit_series(group, task, metric)
      _draw(ax, [d for d, _ in series], [b for _, b in series], scale, color, text,
            len(group.entries) > 1, dash=dash)
    shown.append(legend)
    ax.set(title=task, xlabel="digit length", ylabel=scale.axis)
    _limits(ax, scale)
    ax.grid(alpha=0.3)
  if all(legend == shown[0] for legend in shown):  # one legend serves every panel
    _legend_beside(fig, axes[0])
  else:
    for ax in axes:
      ax.legend(fontsize=7)
  return _save(fig, stem)


def plot_curves(group: Group, metric: str, stem: pathlib.Path) -> list[pathlib.Path]:
  """Metric against samples seen (or step), a line per digit length (shortest dark, longest
  bright; four of them named in the legend); [] without periodic evals."""
  scale = scales.get(metric)
  curves = {t: curve_series(group, t, metric) for t in group.tasks}
  curves = {t: c for t, c in curves.items() if any(bands for _, _, bands in c)}
  if not curves:
    return []
  fig, axes = _panels(len(curves), title=group.label)
  for ax, (task, series) in zip(axes, curves.items()):
    by_samples = all(seen is not None for _, seen, _ in series)
    lengths = sorted({d for _, _, bands in series for d in bands})
    stride = math.ceil(len(lengths) / MAX_CURVES)
    drawn = lengths[::-stride][::-1]  # every stride-th length, the longest included
    named = {drawn[i * (len(drawn) - 1) // 3] for i in range(4)}  # four lengths in the legend
    norm = colors.Normalize(drawn[0], max(drawn[-1], drawn[0] + 1))
    for d in drawn:
      points = [(seen if by_samples else step, bands[d]) for step, seen, bands in series
                if d in bands]
      _draw(ax, [x for x, _ in points], [b for _, b in points], scale, cm.viridis(norm(d)),
            str(d) if d in named else "_", len(group.entries) > 1, marker=None)
    ax.set(title=task if stride == 1 else f"{task} (lengths in steps of {stride})",
           xlabel="samples seen" if by_samples else "training step", ylabel=scale.axis)
    _limits(ax, scale)
    ax.grid(alpha=0.3)
    ax.legend(title="digits", fontsize=7, title_fontsize=7)
  return _save(fig, stem)


def plot_losses(groups: list[Group], stem: pathlib.Path) -> list[pathlib.Path]:
  """Training and validation loss against samples seen (or step): a panel per loss, a line per
  setting, its seeds as a min-max band; on a log axis, since losses fall by orders of magnitude.
  [] when no run logged a loss."""
  panels = {split: [(g, loss_series(g, split)) for g in groups] for split in LOSS_SPLITS}
  panels = {split: [(g, s) for g, s in lines if s] for split, lines in panels.items()}
  panels = {split: lines for split, lines in panels.items() if lines}
  if not panels:
    return []
  fig, axes = _panels(len(panels))
  labels = panel_labels(groups)
  palette = {id(g): _style(i) for i, g in enumerate(groups)}
  legend = {id(g): label if len(g.entries) == 1 else f"{label} ({g.replicas})"
            for g, label in zip(groups, labels)}
  # One x axis for both panels (samples seen unless some point lacks it), so that a run's
  # validation points line up with its training curve.
  by_samples = all(seen is not None for lines in panels.values() for _, series in lines
                   for _, seen, _ in series)
  for ax, (split, lines) in zip(axes, panels.items()):
    for group, series in lines:
      color, dash = palette[id(group)]
      _draw(ax, [seen if by_samples else step for step, seen, _ in series],
            [b for _, _, b in series], _LOSS, color, legend[id(group)],
            len(group.entries) > 1, marker="o" if split == "val" else None, dash=dash)
    if all(b.lo > 0 for _, series in lines for _, _, b in series if b.n):
      ax.set_yscale("log")
    ax.set(title=LOSS_SPLITS[split], xlabel="samples seen" if by_samples else "training step",
           ylabel="loss")
    ax.grid(alpha=0.3)
  lo, hi = min(ax.get_xlim()[0] for ax in axes), max(ax.get_xlim()[1] for ax in axes)
  for ax in axes:
    ax.set_xlim(lo, hi)
  _legend_beside(fig, axes[0])
  return _save(fig, stem)


def plot_heatmap(group: Group, metric: str, stem: pathlib.Path) -> list[pathlib.Path]:
  """Tasks x S/M/L/XL bucket means (seeds: median), values written in the cells."""
  scale = scales.get(metric)
  tasks = group.tasks
  values = [[bucket_band(group, t, b, metric).median for b in BUCKETS] for t in tasks]
  drawn = [[scale.transform(v) for v in row] for row in values]
  finite = [v for row in drawn for v in row if not math.isnan(v)]
  lo, hi = scale.limits or (0.0, max(finite + [1.0]))
  cmap = matplotlib.colormaps[scale.cmap].with_extremes(bad="0.85")
  fig = Figure(figsize=(4.5, 1.2 + 0.32 * len(tasks)), layout="constrained")
  ax = fig.subplots()
  image = ax.imshow(drawn, cmap=cmap, vmin=lo, vmax=hi, aspect="auto")
  for i, row in enumerate(values):
    for j, value in enumerate(row):
      text = "–" if math.isnan(value) else f"{value:.2f}" if scale.limits else f"{value:.1f}"
      bright = math.isnan(value) or (image.norm(drawn[i][j]) > 0.5) != scale.cmap.endswith("_r")
      ax.text(j, i, text, ha="center", va="center", fontsize=7,
              color="black" if bright else "white")
  ax.set_xticks(range(len(BUCKETS)), BUCKETS)
  ax.tick_params(top=True, labeltop=len(tasks) > 12)  # a tall map shows buckets on both ends
  ax.set_yticks(range(len(tasks)), tasks, fontsize=7)
  ax.set_title(f"{group.label}: {scale.title}", fontsize=9)
  fig.colorbar(image, ax=ax, label=scale.axis, shrink=min(1.0, 4 / fig.get_figheight()))
  return _save(fig, stem)
