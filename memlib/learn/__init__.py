"""The learning layer: what exists for the notebooks (grading, exercises, playgrounds,
charts, fact-check claims). The calculation core never imports it."""
