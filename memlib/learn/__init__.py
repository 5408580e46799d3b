"""The learning layer: what exists for the notebooks (grading, exercises, playgrounds,
charts, fact-check claims). The calculation core never imports it."""

from memlib.learn.i18n import get_language, set_language  # noqa: E402,F401  (the grader's language: "en" or "zh")
