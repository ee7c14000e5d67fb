"""`OUT/index.md`: one page, readable on GitHub, that shows every figure and links every table.

Links are relative to OUT so the folder can be committed or moved as a whole.
"""
import dataclasses
import pathlib

from nupa_jax.report import scales
from nupa_jax.report.grouping import Group
from nupa_jax.report.loading import Entry
from nupa_jax.report.paper_tables import Comparison, render
from nupa_jax.report.tables import markdown


@dataclasses.dataclass
class Artifacts:
  """What a report wrote, for the index to show: figure files come as [png, svg]."""
  metric: str
  digits_figure: list[pathlib.Path]
  losses_figure: list[pathlib.Path]  # [] when no run logged a loss
  curves: list[tuple[Group, list[pathlib.Path]]]  # [] for a setting without periodic evals
  heatmaps: list[tuple[Group, list[pathlib.Path]]]
  run_tables: dict[str, pathlib.Path]
  comparison_markdown: str  # the side-by-side table of `metric`, shown inline
  comparisons: dict[str, dict[str, pathlib.Path]]  # metric -> {"markdown", "csv"}
  series: dict[str, pathlib.Path]
  paper: list[tuple[Comparison, dict[str, pathlib.Path]]]  # with its {"markdown", "csv"}


def _escape(text: str) -> str:
  return text.replace("[", "\\[").replace("]", "\\]")


def _rel(out: pathlib.Path, path: pathlib.Path) -> str:
  return path.relative_to(out).as_posix()


def _figure(out: pathlib.Path, files: list[pathlib.Path], alt: str,
            data: pathlib.Path | None = None) -> str:
  png, svg = (_rel(out, f) for f in files)
  links = f"[SVG]({svg})" + (f" · [data]({_rel(out, data)})" if data else "")
  return f"![{_escape(alt)}]({png})\n\n{links}\n"


def _runs_table(entries: list[Entry], groups: list[Group]) -> str:
  line = {id(e): g.label for g in groups for e in g.entries}
  rows = []
  for e in entries:
    seen = next((ev.samples_seen for ev in [e.final, *reversed(e.history)]
                 if ev.samples_seen is not None), None)
    rows.append([line[id(e)], e.name, e.kind, ", ".join(e.final.tasks), e.final.step,
                 None if seen is None else f"{seen:,.0f}", len(e.history),
                 f"`{e.final.source}`"])
  return markdown(["line", "run", "kind", "tasks", "step", "samples seen", "evals",
                   "final results"], rows)


def _paper_section(out: pathlib.Path,
                   paper: list[tuple[Comparison, dict[str, pathlib.Path]]]) -> list[str]:
  """Each paper table with our values beside the paper's (`--paper`), inline."""
  if not paper:
    return []
  text = ["## Side by side with the paper\n"]
  for comparison, files in paper:
    text += [render(comparison, level=3),
             f"[Markdown]({_rel(out, files['markdown'])}) · [CSV]({_rel(out, files['csv'])})\n"]
  return text


def write_index(out: pathlib.Path, entries: list[Entry], groups: list[Group],
                art: Artifacts) -> pathlib.Path:
  title = scales.get(art.metric).title
  text = ["# NUPA report\n",
          f"Figures show **{title}** (`--metric {art.metric}`); seeds of one setting are drawn "
          "as their median with a min-max band. Tables hold all three metrics.\n",
          "## Runs\n", _runs_table(entries, groups),
          f"## {title.capitalize()} vs digit length\n",
          "One panel per task, one line per setting; the shaded band is the trained range.\n",
          _figure(out, art.digits_figure, f"{title} vs digit length", art.series["digits_csv"])]
  if art.losses_figure:
    text += ["## Training and validation loss vs samples seen\n",
             "One line per setting: the training loss of each logged step and the validation "
             "loss of each evaluation.\n",
             _figure(out, art.losses_figure, "training and validation loss vs samples seen",
                     art.series["losses_csv"])]
  drawn = [(g, files) for g, files in art.curves if files]
  missing = [g.label for g, files in art.curves if not files]
  text.append(f"## {title.capitalize()} vs samples seen\n")
  if drawn:
    text.append(f"One line per digit length, from the periodic evals "
                f"([data]({_rel(out, art.series['curves_csv'])})).\n")
  for group, files in drawn:
    text += [f"### {group.label}\n", _figure(out, files, f"{group.label}: training curves")]
  if missing:
    text.append(f"No periodic evals (final eval only): {', '.join(missing)}.\n")
  if art.heatmaps:
    text.append("## Tasks × buckets\n")
    for group, files in art.heatmaps:
      text += [f"### {group.label}\n", _figure(out, files, f"{group.label}: tasks x buckets")]
  text += _paper_section(out, art.paper)
  runs = {k: _rel(out, p) for k, p in art.run_tables.items()}
  text += ["## Tables\n",
           f"- [Per-run S/M/L/XL means and wld / ppd]({runs['markdown']}) — CSV: "
           f"[buckets]({runs['buckets_csv']}), [wld / ppd]({runs['digits_csv']})"]
  text += [f"- [Runs side by side: {scales.get(m).title}]({_rel(out, files['markdown'])}) — "
           f"[CSV]({_rel(out, files['csv'])})" for m, files in art.comparisons.items()]
  text += ["",
           f"### Runs side by side: {title}\n", art.comparison_markdown]
  path = out / "index.md"
  path.write_text("\n".join(text))
  return path
