"""What the one-summary playgrounds share (notebook 07's cost, notebook 08's RLHF): controls on the left,
one HTML summary on the right, recomputed on every change; a setting memlib refuses shows its reason."""

from __future__ import annotations


class SummaryPanel:
    """Subclasses pass their controls (ipywidgets by keyword) to `_start` and set `summarize` (the summary
    function, called with `values()`) and `render` (its HTML)."""

    summarize = None
    render = None

    def _start(self, controls: dict) -> None:
        import ipywidgets as w
        self.controls = controls
        self.output = w.HTML()
        self.widget = w.HBox([w.VBox(list(controls.values())), self.output])
        for c in controls.values():
            c.observe(lambda _change: self.update(), names="value")
        self.summary = None
        self.update()

    def values(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def update(self) -> None:
        """Recompute and redraw; a setting memlib refuses is shown with its reason, not a traceback."""
        try:
            self.summary = self.summarize(**self.values())
        except ValueError as e:
            self.output.value = f"<span style='color:#b00'>{e}</span>"
            return
        self.output.value = self.render(self.summary)

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)
