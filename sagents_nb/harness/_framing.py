"""Cuts a byte stream into lines: partial lines wait for the next chunk, over-long ones are dropped."""

from __future__ import annotations


class LineFramer:
    """Frames lines out of arbitrary chunks; a line over `max_line_bytes` comes out as None.

    Args:
        max_line_bytes: The longest line kept, not counting its newline.
    """

    def __init__(self, max_line_bytes: int) -> None:
        self._max = max_line_bytes
        self._partial = bytearray()
        self._skipping = False

    def feed(self, chunk: bytes) -> list[bytes | None]:
        """The lines `chunk` completes, in order; None stands for each over-long line."""
        lines: list[bytes | None] = []
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            piece = chunk[start:end]
            if self._skipping:
                self._skipping = False  # the over-long line ends here; it was reported already
            elif len(self._partial) + len(piece) > self._max:
                lines.append(None)
            else:
                lines.append(bytes(self._partial + piece))
            self._partial.clear()
            start = end + 1
        rest = chunk[start:]
        if self._skipping:
            return lines
        if len(self._partial) + len(rest) > self._max:
            # Report it now rather than buffering an unbounded line until its newline.
            lines.append(None)
            self._partial.clear()
            self._skipping = True
        else:
            self._partial += rest
        return lines

    def finish(self) -> list[bytes | None]:
        """The last line when the stream ended without a newline."""
        if self._skipping or not self._partial:
            return []
        line = bytes(self._partial)
        self._partial.clear()
        return [line]
