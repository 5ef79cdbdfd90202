"""Engines find the datasets consistent with a release. They are pure: no files, no terminal."""
