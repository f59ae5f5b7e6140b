"""One setting (course_utils/links.py: COURSE_REPO) for every badge and link to the course."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from course_utils import build, links

ROOT = Path(__file__).resolve().parent.parent
COURSE_URL = re.compile(
    r"(?:mybinder\.org/v2/gh/|colab\.research\.google\.com/github/|github\.com/)([\w.-]+/[\w-]+)")
THIRD_PARTY = {"jupyterhub/nbgitpuller", "srush/Tensor-Puzzles",  # further reading in lesson 01
               "karpathy/nanoGPT"}  # and in lesson 15


def _files():
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").glob("*.md"))
    yield from sorted(build.NOTEBOOKS.glob("*.ipynb"))
    yield ROOT / "course_utils" / "colab.py"


@pytest.mark.parametrize("path", list(_files()), ids=lambda p: p.name)
def test_every_course_link_uses_the_one_setting(path):
    text = path.read_text(encoding="utf-8")
    repos = set(COURSE_URL.findall(text)) - THIRD_PARTY
    assert repos <= {links.COURSE_REPO}, \
        f"{path.name} links to {repos - {links.COURSE_REPO}}; use course_utils/links.py"


def test_readme_badges_are_generated():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert links.README_BEGIN in text and links.README_END in text
    assert not links.readme_out_of_date(), "run `python -m course_utils build`"
    assert links.binder_url() in text and "labpath=notebooks%2F00_start_here.ipynb" in links.binder_url()


def test_urls_follow_the_setting(monkeypatch):
    monkeypatch.setattr(links, "COURSE_REPO", "someone/pytorch-course")
    assert links.binder_url().startswith("https://mybinder.org/v2/gh/someone/pytorch-course/main?labpath=")
    assert links.colab_url("notebooks/01_tensors.ipynb") == (
        "https://colab.research.google.com/github/someone/pytorch-course/blob/main/notebooks/01_tensors.ipynb")
    assert links.pip_source() == "git+https://github.com/someone/pytorch-course@main"
    hub = links.nbgitpuller_url("https://hub.example.org/")
    assert hub.startswith("https://hub.example.org/hub/user-redirect/git-pull?repo=https://github.com/someone/pytorch-course")
    assert f"urlpath=lab/tree/{links.HUB_TARGET}/notebooks/00_start_here.ipynb" in hub
    assert f"targetpath={links.HUB_TARGET}" in hub
    block = links.sync_readme(f"a\n{links.README_BEGIN}\nold\n{links.README_END}\nb github.com/OWNER/REPO.git")
    assert "someone/pytorch-course" in block and "old" not in block and block.startswith("a\n")
    assert block.endswith("b github.com/someone/pytorch-course.git")
