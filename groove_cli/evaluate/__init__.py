"""Evaluation against a golden file: golden loading, metrics, bootstrap CIs, history and reports.

The modules here are pure or touch only the golden and history files; the runner that executes the
searches and the `eval` command live elsewhere (eval.md).
"""
