"""What a topic notebook and its deep dive share (issue 44): each chNN module holds the constants and helpers both
pages used to define in their setup cells, defined once; both import them by name.

    from memlib.learn.chapters.ch02 import A100, CARDS, M7, MB, SEQ, spoken

Only setup lives here (names of models and GPUs, the question's settings, small formatting or lookup helpers);
the figures each page derives stay on the page, computed by memlib where the reader sees them.
"""
