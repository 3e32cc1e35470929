"""LineFramer: lines across chunk boundaries, and over-long lines skipped without buffering them."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sagents_nb.harness._framing import LineFramer

pytestmark = pytest.mark.timeout(30)


def test_partial_lines_wait_for_their_newline():
    framer = LineFramer(100)
    assert framer.feed(b'{"a"') == []
    assert framer.feed(b": 1}\n{") == [b'{"a": 1}']
    assert framer.feed(b"}\n\n") == [b"{}", b""]
    assert framer.finish() == []


def test_the_last_line_without_a_newline_comes_out_at_the_end():
    framer = LineFramer(100)
    assert framer.feed(b"tail") == []
    assert framer.finish() == [b"tail"]


def test_an_over_long_line_is_reported_once_and_skipped():
    framer = LineFramer(5)
    assert framer.feed(b"ok\n1234") == [b"ok"]
    assert framer.feed(b"56789") == [None]
    assert framer.feed(b"more of it") == []
    assert framer.feed(b"...\nnext\n") == [b"next"]
    assert framer.feed(b"123456\n") == [None]
    assert framer.feed(b"12345\n") == [b"12345"]


def test_an_unterminated_over_long_line_gives_nothing_at_the_end():
    framer = LineFramer(3)
    assert framer.feed(b"abcdef") == [None]
    assert framer.finish() == []


@given(
    lines=st.lists(st.binary(max_size=20).filter(lambda b: b"\n" not in b), max_size=10),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=10),
)
def test_chunking_never_changes_the_lines(lines, cuts):
    data = b"".join(line + b"\n" for line in lines)
    framer = LineFramer(10)
    framed = []
    edges = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    for start, end in itertools.pairwise(edges):
        framed += framer.feed(data[start:end])
    framed += framer.finish()
    assert framed == [line if len(line) <= 10 else None for line in lines]
