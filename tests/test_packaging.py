"""A built wheel must hold every folder of the package: setuptools finds only regular packages
(with ``__init__.py``), and ``census/`` was once a namespace package a wheel left out."""

from __future__ import annotations

from pathlib import Path

from setuptools import find_packages

SRC = Path(__file__).resolve().parent.parent / "src"


def test_every_folder_with_code_is_a_package_setuptools_finds() -> None:
    found = set(find_packages(str(SRC)))
    folders = {".".join(p.parent.relative_to(SRC).parts) for p in SRC.rglob("*.py")
               if "egg-info" not in str(p)}
    assert folders <= found, sorted(folders - found)
