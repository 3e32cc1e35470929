"""A sweep's progress bar as a widget, shown in the cell that runs the sweep."""

from __future__ import annotations

import ipywidgets as widgets


class SweepProgress:
    """An `IntProgress` and a label; updated from the library's loop thread."""

    def __init__(self) -> None:
        self.bar = widgets.IntProgress(value=0, min=0, max=1, description="sweep")
        self.label = widgets.Label()
        self.box = widgets.HBox([self.bar, self.label])
        self.total = 0

    def start(self, total: int, done: int) -> None:
        from IPython.display import display

        self.total = total
        self.bar.max = max(1, total)
        self.bar.value = done
        self.label.value = f"{done}/{total}"
        display(self.box)

    def advance(self, done: int, errors: int) -> None:
        self.bar.value = done
        failed = f" · {errors} error{'s' * (errors != 1)}" if errors else ""
        self.label.value = f"{done}/{self.total}{failed}"

    def close(self, interrupted: bool) -> None:
        self.bar.bar_style = "warning" if interrupted else "success"
        if interrupted:
            self.label.value += " · interrupted"


def sweep_progress() -> SweepProgress:
    """The progress bar `sn.sweep` shows in a notebook."""
    return SweepProgress()
