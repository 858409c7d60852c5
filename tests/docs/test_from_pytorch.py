"""Every snippet of docs/from_pytorch.md runs and its asserts hold (issue 16).

The page's code blocks carry ``:class: pytorch-side`` or ``:class: jax-side``. Each side runs top
to bottom in one namespace, as a reader would paste it; the PyTorch side needs torch (the
``crosscheck`` extra).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "from_pytorch.md"
# A fence opening a list-table cell ("* - ```{code-block} python" or "  - ..."), its :class:, the
# indented body, and the closing fence.
BLOCK = re.compile(
    r"^[ *-]*```\{code-block\} python\n[ ]*:class: (?P<side>[\w-]+)\n(?P<body>.*?)^[ ]*```$",
    re.M | re.S,
)


def snippets(side: str) -> list[str]:
    found = [
        (m["side"], textwrap.dedent(m["body"]).strip("\n"))
        for m in BLOCK.finditer(PAGE.read_text(encoding="utf-8"))
    ]
    assert {s for s, _ in found} == {"pytorch-side", "jax-side"}, "unexpected code-block classes"
    return [body for s, body in found if s == side]


def run_blocks(blocks: list[str], side: str) -> int:
    namespace: dict = {}
    for i, body in enumerate(blocks):
        code = compile(body, f"{PAGE.name}:{side}[{i}]", "exec")
        exec(code, namespace)  # an assert on the page that fails raises here, naming the block
    return len(blocks)


def test_both_columns_have_one_block_per_row():
    assert len(snippets("jax-side")) == len(snippets("pytorch-side")) >= 9


def test_jaxparadigm_side_runs():
    assert run_blocks(snippets("jax-side"), "jax-side") >= 9


@pytest.mark.crosscheck
def test_pytorch_side_runs():
    pytest.importorskip("torch")
    assert run_blocks(snippets("pytorch-side"), "pytorch-side") >= 9


def test_a_wrong_value_on_the_page_would_fail():
    """The runner executes the page's asserts: the grad-of-grad row claiming 13 instead of 12 fails."""
    blocks = snippets("jax-side")
    mutated = [b.replace("== 12.0", "== 13.0") for b in blocks]
    assert mutated != blocks
    with pytest.raises(AssertionError):
        run_blocks(mutated, "jax-side")
