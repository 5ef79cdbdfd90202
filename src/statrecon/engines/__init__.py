"""Engines find the datasets consistent with a release. They are pure: no files, no terminal.

Each family is a folder with one entry point, its ``__init__``; the families meet only in
``solvers`` below them (docs/architecture.md, "The engine families")."""
