"""`rtcbench figure`: a run's figure over time, drawn again for a paper or a page
(docs/figures.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from rtcbench.cli.errors import _fail, guarded
from rtcbench.cli.options import _listed_option
from rtcbench.cli.render import console, err_console

FORMATS = ("png", "svg", "pdf")


@guarded("no figure was written")
def figure_cmd(
    dirs: Annotated[
        list[Path],
        typer.Argument(help="Run folders, or folders of runs (a suite's --out).", show_default=False),
    ],
    out: Annotated[Path, typer.Option(help="The folder the figures are written into.")] = Path("figures"),
    style: Annotated[
        str,
        typer.Option(
            help="paper: a page's text width (7.16 in), serif, PNG at 300 dpi in full colour; "
            "screen: as `rtcbench run` and the report draw it (10 in, 90 dpi)."
        ),
    ] = "paper",
    formats: Annotated[
        list[str] | None,
        typer.Option(
            "--format",
            help="Files per figure, comma-separated or repeated: png, svg, pdf (default: pdf,png).",
        ),
    ] = None,
) -> None:
    """Draw the figure over time of every run under DIRS (rates with the calls on their own scale,
    queuing delay, loss, frames: docs/report.md) into OUT as <case>--<controller>--seed-<n>.<format>,
    for print (--style paper, the default: vector PDF and SVG, or 300 dpi PNG) or a page. Any run
    can be drawn, a suite's too (suites draw none). Runs that cannot be drawn are named on stderr."""
    from rtcbench.report.figures import draw_runs

    if style not in ("paper", "screen"):
        _fail(f"--style must be paper or screen, got {style!r}")
    chosen = _listed_option(formats) or ["pdf", "png"]
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown:
        _fail(f"--format {unknown[0]!r} is not one of {', '.join(FORMATS)}")
    for d in dirs:
        if not d.is_dir():
            _fail(f"{d}: not a folder")
    if out.exists() and not out.is_dir():
        _fail(f"--out {out}: not a folder")
    written, problems = draw_runs(dirs, out, style=style, formats=chosen)  # type: ignore[arg-type]
    for p in problems:
        err_console.print(f"[yellow]problem:[/] {escape(p)}", highlight=False, soft_wrap=True)
    if not written:
        _fail(
            f"no figure could be drawn under {', '.join(map(str, dirs))}"
            + (f": {problems[0]}" if problems else "")
        )
    console.print(escape(f"figures: {len(written)} files in {out}"), highlight=False)
