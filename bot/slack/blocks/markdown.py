"""Model-written Markdown as Slack renders it: `markdown` and `table` blocks, within limits.

Text a model writes is standard Markdown. It goes to Slack in `markdown` blocks (12,000
characters across one message), its tables in a `table` block where they fit (one per
message, 100 rows of 20 cells), else in a code block. Long text is split into several messages
on paragraph boundaries, never inside a code fence (a fence longer than one message is closed
and reopened). Mentions and channel links the model writes are neutralised, except the
requester's own mention.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.slack.blocks import limits as L
from bot.slack.blocks.fmt import one_line

WORD_JOINER = "\u2060"  # invisible; keeps "@channel" from being read as a mention
MAX_MESSAGES = 5  # an answer longer than this many messages is cut with a note
FALLBACK_TEXT = 300

_SLACK_REF = re.compile(r"<([@#!])([^<>|\s]*)(?:\|([^<>]*))?>")
_BARE_BROADCAST = re.compile(r"(?<![\w\u2060])@(channel|here|everyone)\b")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})(.*)$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")


# ---- mentions ---------------------------------------------------------------------------


def neutralise(text: str, requester: str | None = None) -> str:
    """Turn mentions and channel links a model wrote into plain text, except the requester's.

    `<@U1>` becomes "@U1", `<!channel>` "@channel", `<!subteam^S1|@ops>` "@ops", `<#C1|x>`
    "#x" (each with an invisible word joiner after the sigil, so nothing pings anyone).
    """

    def plain(m: re.Match[str]) -> str:
        sigil, ref, label = m.group(1), m.group(2), m.group(3)
        if sigil == "@" and requester and ref == requester and not label:
            return m.group(0)
        if sigil == "!" and ref.startswith("date^"):
            return label or ""
        if sigil == "!" and ref.startswith("subteam^"):
            ref = ref.split("^", 1)[1]
        name = (label or ref).lstrip("@#")
        return ("#" if sigil == "#" else "@") + WORD_JOINER + name

    text = _SLACK_REF.sub(plain, text)
    return _BARE_BROADCAST.sub(lambda m: "@" + WORD_JOINER + m.group(1), text)


# ---- parsing ----------------------------------------------------------------------------

SegmentKind = Literal["text", "code", "table"]


@dataclass
class Segment:
    """A run of lines: plain Markdown text, one fenced code block, or one table."""

    kind: SegmentKind
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _is_table_row(line: str) -> bool:
    return line.strip().startswith("|") and line.count("|") >= 2


def parse(text: str) -> list[Segment]:
    """Split Markdown into text, fenced code and table segments (in order)."""
    lines = text.split("\n")
    out: list[Segment] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            marker = fence.group(1)
            seg = Segment("code", [line])
            i += 1
            while i < len(lines):
                seg.lines.append(lines[i])
                i += 1
                close = lines[i - 1].strip()
                if close.startswith(marker[0] * len(marker)) and not close.strip(marker[0]):
                    break
            else:
                seg.lines.append(marker)  # an unclosed fence is closed at the end
            out.append(seg)
            continue
        if _is_table_row(line) and i + 1 < len(lines) and _TABLE_SEP.match(lines[i + 1]):
            seg = Segment("table", [line, lines[i + 1]])
            i += 2
            while i < len(lines) and _is_table_row(lines[i]):
                seg.lines.append(lines[i])
                i += 1
            out.append(seg)
            continue
        if not out or out[-1].kind != "text":
            out.append(Segment("text"))
        out[-1].lines.append(line)
        i += 1
    return out


def table_cells(line: str) -> list[str]:
    """The cells of a Markdown table row (`\\|` is a literal bar)."""
    row = line.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)]


def table_block(seg: Segment, bid: str) -> dict[str, Any] | None:
    """A `table` block for a table segment, or None when it does not fit Slack's limits."""
    rows = [table_cells(seg.lines[0])] + [table_cells(line) for line in seg.lines[2:]]
    width = len(rows[0])
    if len(rows) > L.TABLE_ROWS or width > L.TABLE_COLUMNS:
        return None
    if any(len(c) > L.TABLE_CELL for row in rows for c in row):
        return None
    aligns = []
    for spec in table_cells(seg.lines[1])[:width]:
        right, left = spec.endswith(":"), spec.startswith(":")
        aligns.append("center" if left and right else "right" if right else "left")
    cells = [
        [{"type": "raw_text", "text": L.nonempty(c)} for c in (row + [""] * width)[:width]]
        for row in rows
    ]
    block: dict[str, Any] = {"type": "table", "block_id": bid, "rows": cells}
    if any(a != "left" for a in aligns):
        block["column_settings"] = [{"align": a} for a in aligns]
    return block


# ---- splitting --------------------------------------------------------------------------


def _paragraphs(text: str) -> list[str]:
    """Text split after blank lines (each piece keeps its trailing newlines)."""
    return [p for p in re.split(r"(?<=\n\n)", text) if p]


def _hard_split(text: str, size: int) -> list[str]:
    """Pieces of ≤ `size`, at line ends when possible."""
    return L.split_text(text, size, escape_it=False)


def _code_pieces(seg: Segment, size: int) -> list[str]:
    """A fence as one piece, or several closed fences of ≤ `size` each when it is too long."""
    text = seg.text
    if len(text) <= size:
        return [text]
    opening, closing = seg.lines[0], seg.lines[-1]
    body = "\n".join(seg.lines[1:-1])
    room = max(1, size - len(opening) - len(closing) - 2)
    return [f"{opening}\n{piece.rstrip(chr(10))}\n{closing}" for piece in _hard_split(body, room)]


def _table_code(seg: Segment) -> Segment:
    return Segment("code", ["```", *seg.lines, "```"])


def pieces(text: str, size: int = L.MARKDOWN_TEXT) -> Iterator[tuple[SegmentKind, str, Segment]]:
    """The Markdown as (kind, text, segment) pieces of ≤ `size` characters each."""
    for seg in parse(text):
        if seg.kind == "table":
            if table_block(seg, "t") is not None:
                yield "table", seg.text, seg
                continue
            seg = _table_code(seg)
        if seg.kind == "code":
            for piece in _code_pieces(seg, size):
                yield "code", piece, seg
            continue
        for para in _paragraphs(seg.text):
            for piece in _hard_split(para, size) if len(para) > size else [para]:
                yield "text", piece, seg


# ---- messages ---------------------------------------------------------------------------


def plain_text(markdown: str) -> str:
    """A readable one-line rendering for notifications (the message's `text`)."""
    text = re.sub(r"^\s{0,3}(`{3,}|~{3,}).*$", "", markdown, flags=re.M)
    text = re.sub(r"!?\[([^\]]*)\]\(([^)\s]+)[^)]*\)", r"\1 (\2)", text)
    text = re.sub(r"^\s{0,3}#{1,6}\s+", "", text, flags=re.M)
    text = re.sub(r"(\*\*|__|~~)(.+?)\1", r"\2", text)
    text = re.sub(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$", "", text, flags=re.M)
    text = L.escape(one_line(text))
    return re.sub(r"&lt;@([UW][A-Z0-9]+)&gt;", r"<@\1>", text)  # the requester's own mention


@dataclass
class _Draft:
    blocks: list[dict[str, Any]] = field(default_factory=list)
    text: list[str] = field(default_factory=list)  # markdown of the current block
    used: int = 0  # markdown characters in this message
    source: list[str] = field(default_factory=list)  # for the fallback text


def markdown_messages(
    markdown: str,
    prefix: str,
    *,
    requester: str | None = None,
    footer_blocks: int = 1,
    max_messages: int = MAX_MESSAGES,
) -> list[dict[str, Any]]:
    # Longer than 60 lines because splitting never inside a code fence is one loop.
    """Messages (`text` + `blocks`) showing `markdown`, each leaving room for `footer_blocks`.

    Every message holds ≤ 12,000 markdown characters and at most one table, which ends its
    message (Slack shows a table below the message's text). Past `max_messages` the text is
    cut with a visible note.
    """
    markdown = neutralise(markdown.strip() or "(no text)", requester)
    room = L.MARKDOWN_TEXT
    drafts: list[_Draft] = [_Draft()]
    block_limit = L.MESSAGE_BLOCKS - footer_blocks
    n = 0

    def flush() -> None:
        nonlocal n
        d = drafts[-1]
        body = "".join(d.text).strip("\n")
        if body.strip():
            d.blocks.append(
                {"type": "markdown", "block_id": L.block_id(prefix, str(n)), "text": body}
            )
            n += 1
        d.text = []

    all_pieces = list(pieces(markdown, room))
    for index, (kind, text, seg) in enumerate(all_pieces):
        d = drafts[-1]
        extra = 0 if kind == "table" else len(text) + (2 if kind == "code" else 0)
        full = d.used + extra > room or len(d.blocks) + 2 > block_limit
        if full or (d.blocks and d.blocks[-1]["type"] == "table"):
            flush()
            if len(drafts) == max_messages:
                rest = sum(len(t) for _, t, _ in all_pieces[index:])
                _cut_note(drafts[-1], rest, prefix, n)
                break
            drafts.append(_Draft())
            d = drafts[-1]
        d.source.append(text)
        if kind == "table":
            flush()
            block = table_block(seg, L.block_id(prefix, str(n)))
            assert block is not None
            d.blocks.append(block)
            n += 1
            continue
        if kind == "code" and d.text and not d.text[-1].endswith("\n"):
            d.text.append("\n")
        d.text.append(text + ("\n" if kind == "code" else ""))
        d.used += extra
    else:
        flush()
    return [
        {
            "text": L.cut_text(L.nonempty(plain_text("".join(d.source))), FALLBACK_TEXT),
            "blocks": d.blocks,
        }
        for d in drafts
        if d.blocks
    ]


def _cut_note(d: _Draft, rest: int, prefix: str, n: int) -> None:
    note = f"_… (cut: {rest:,} more characters)_"
    for block in reversed(d.blocks):
        if block["type"] == "markdown" and d.used + len(note) + 2 <= L.MARKDOWN_TEXT:
            block["text"] += "\n\n" + note
            return
    d.blocks.append(L.context([note], L.block_id(prefix, f"{n}-cut")))


def markdown_block(
    markdown: str, bid: str, *, requester: str | None = None, limit: int = 2900
) -> dict[str, Any]:
    """One `markdown` block of ≤ `limit` characters (cut with a note), e.g. a review draft."""
    text = neutralise(L.nonempty(markdown.strip(), "(no text)"), requester)
    if len(text) > limit:
        head = next(pieces(text, limit - 60))[1]
        text = head + f"\n\n_… (cut: {len(text) - len(head):,} more characters)_"
    return {"type": "markdown", "block_id": bid, "text": text}
