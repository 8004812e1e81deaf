"""Progress on the commands' long steps (a deploy, a build, a wait): a spinner, what is being done, the time so far.

On a terminal the line updates in place and stays, with its time, when the step ends; elsewhere (CI's log) it is
printed once the step ends. Always on stderr: a command's stdout is its answer (``recovery restore`` prints JSON after
starting the catalog with a deploy). Downloads have their own bars (``lakehouse_platform.artifacts.maven``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

console = Console(stderr=True)


@contextlib.contextmanager
def step(title: str) -> Iterator[Callable[[str], None]]:
    """Show ``title`` with a spinner and its elapsed time while the block runs; yields ``detail(text)``, which
    shows what the step is doing now (e.g. the resource a deploy is at)."""
    with Progress(SpinnerColumn(finished_text="[green]done[/]"), TextColumn("{task.description}"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        task = progress.add_task(escape(title), total=1)

        def detail(text: str) -> None:
            progress.update(task, description=f"{escape(title)}: {escape(text)}" if text else escape(title))

        try:
            yield detail
        except BaseException:
            progress.update(task, description=f"{escape(title)}: [red]failed[/]")
            raise
        progress.update(task, description=escape(title), completed=1)
