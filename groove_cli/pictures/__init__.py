"""Pictures of measurements (eval.md §15, tune.md §12, serve.md §4.2): the plots of an eval
history and of a tune sweep, drawn by matplotlib (the `pictures` extra, imported only while
drawing). Both the command line's `--report` (render/) and the web view's history page (through
`Index.history_pictures`) use them; nothing here writes a file or knows a flag.
"""
