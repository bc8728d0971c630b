# Longer than 400 lines because it is the one place that enforces every Slack Block Kit limit
# (DESIGN.md: truncate with a visible note, never send what Slack rejects).
"""Slack Block Kit limits, in one place: cut helpers and validators.

Builders cut user data with a visible note; `validate_message` / `validate_view` raise
`ValueError` on anything Slack would reject (used by the tests on every builder output).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

MESSAGE_BLOCKS = 50
VIEW_BLOCKS = 100
MESSAGE_TEXT = 4000  # fallback `text` of a message (Slack cuts at 40,000; we stay well under)
SECTION_TEXT = 3000
SECTION_FIELDS = 10
SECTION_FIELD_TEXT = 2000
HEADER_TEXT = 150
CONTEXT_ELEMENTS = 10
CONTEXT_TEXT = 2000
BUTTON_TEXT = 75
BUTTON_VALUE = 2000
BUTTON_URL = 3000
ACTION_ID = 255
BLOCK_ID = 255
CALLBACK_ID = 255
ACTIONS_ELEMENTS = 25
MODAL_TITLE = 24
MODAL_BUTTON = 24  # submit / close
PRIVATE_METADATA = 3000
INPUT_LABEL = 2000
INPUT_HINT = 2000
INPUT_MAX_LENGTH = 3000  # plain_text_input max_length and initial_value
PLACEHOLDER = 150
SELECT_OPTIONS = 100
OPTION_TEXT = 75
OPTION_VALUE = 150
CONFIRM_TITLE = 100
CONFIRM_TEXT = 300
CONFIRM_BUTTON = 30
# markdown blocks (LLM output, standard Markdown): 12,000 characters, counted across every
# markdown block of one message; table blocks: one per message, 100 rows of 20 cells.
MARKDOWN_TEXT = 12_000
MESSAGE_TABLES = 1
TABLE_ROWS = 100
TABLE_COLUMNS = 20
TABLE_CELL = 2000  # our own bound on a raw_text cell (long cells are better as a code block)

ELLIPSIS = "…"
CUT_NOTE = "… (cut: {n:,} more characters)"
ARGS_CUT_NOTE = "… (cut: {n:,} more characters; use View full arguments)"


def escape(text: str) -> str:
    """Escape user text for mrkdwn (&, <, >)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_PLAIN = str.maketrans(
    {
        "*": "\u2217",  # ∗  no bold
        "_": "\u02cd",  # ˍ  no italics
        "~": "\u223c",  # ∼  no strike-through
        "`": "\u02cb",  # ˋ  no code
        "[": "\u298b",  # ⦋  no [text](url) links
        "]": "\u298c",  # ⦌
    }
)


def caller_text(text: str) -> str:
    """Caller text as plain text inside mrkdwn: escaped (&, <, >: no links with hidden targets,
    no mentions) and with formatting characters replaced by look-alikes, so it cannot dress
    itself as sayso's own words. Bare URLs stay as they are (Slack shows their real host)."""
    words = []
    for word in escape(text).split(" "):
        is_url = word.startswith(("http://", "https://")) and "&" not in word
        # ∶ for a colon that could open an :emoji: shortcode ("pr: #42" keeps its colon)
        words.append(word if is_url else re.sub(r":(?=\S)", "\u2236", word.translate(_PLAIN)))
    return " ".join(words)


def _safe_end(text: str, end: int) -> int:
    """Move a cut point back so it does not split `<...>` markup or an `&...;` entity."""
    head = text[:end]
    lt, gt = head.rfind("<"), head.rfind(">")
    if lt > gt:
        end = lt
    amp = text.rfind("&", 0, end)
    if amp != -1 and ";" not in text[amp:end] and end - amp <= 5:
        end = amp
    return end


def cut_text(text: str, limit: int, note: str = CUT_NOTE) -> str:
    """Return `text` if it fits in `limit`, else a prefix plus `note` (formatted with n=cut)."""
    if len(text) <= limit:
        return text
    sample = note.format(n=len(text))
    end = max(0, limit - len(sample))
    end = _safe_end(text, end)
    result = text[:end] + note.format(n=len(text) - end)
    if len(result) > limit:  # a tiny limit: the note alone does not fit
        return text[: max(0, limit - 1)] + ELLIPSIS
    return result


def nonempty(text: str, fallback: str = "-") -> str:
    """Slack rejects empty text objects."""
    return text if text.strip() else fallback


def plain(text: str, limit: int) -> dict[str, Any]:
    """A plain_text object cut to `limit`."""
    return {"type": "plain_text", "text": cut_text(nonempty(text), limit), "emoji": True}


def mrkdwn(text: str, limit: int = SECTION_TEXT) -> dict[str, Any]:
    """A mrkdwn text object cut to `limit` (the caller escapes user parts)."""
    return {"type": "mrkdwn", "text": cut_text(nonempty(text), limit)}


def escaped_prefix(raw: str, budget: int) -> int:
    """The length of the longest prefix of `raw` whose escaped form fits in `budget`."""
    k = min(len(raw), max(0, budget))
    while k > 0:
        size = len(escape(raw[:k]))
        if size <= budget:
            return k
        k -= max(1, (size - budget + 3) // 4)
    return 0


def split_text(raw: str, size: int, escape_it: bool = True) -> list[str]:
    """Split `raw` into chunks of (escaped) length ≤ `size`, at newlines when possible."""
    chunks: list[str] = []
    rest = raw
    while rest:
        k = escaped_prefix(rest, size) if escape_it else min(len(rest), size)
        if k < len(rest):
            nl = rest.rfind("\n", 0, k)
            if nl > k // 2:
                k = nl + 1
        k = max(k, 1)
        chunks.append(rest[:k])
        rest = rest[k:]
    return chunks


_BACKTICK_RUN = re.compile(r"`(?=`)")
FENCE = 8
"""Characters a code fence adds at most: ``` on each side and a zero-width space at each end."""


def break_backticks(raw: str) -> str:
    """`raw` with no two backticks in a row (a zero-width space after each backtick that
    another follows): nothing inside a code block can close it or open a new one."""
    return _BACKTICK_RUN.sub("`\u200b", raw)


def fence(raw: str) -> str:
    """Escaped ```code``` mrkdwn for `raw`, the one way every builder fences code: runs of
    backticks are broken up, and a backtick at either end is kept off the fence."""
    body = break_backticks(raw)
    if body.startswith("`"):
        body = "\u200b" + body
    if body.endswith("`"):
        body += "\u200b"
    return f"```{escape(body)}```"


def code_block(raw: str, limit: int = SECTION_TEXT, note: str = CUT_NOTE) -> tuple[str, bool]:
    """Escaped ```code``` mrkdwn for `raw`, cut to fit `limit` with `note`; returns (text, cut)."""
    raw = nonempty(break_backticks(raw), " ")
    if len(escape(raw)) + FENCE <= limit:
        return fence(raw), False
    budget = limit - FENCE - len(note.format(n=len(raw)))
    k = escaped_prefix(raw, budget)
    return fence(raw[:k]) + note.format(n=len(raw) - k), True


def block_id(prefix: str, ref: str) -> str:
    """`prefix:ref`, hashed when it would exceed Slack's block_id limit."""
    bid = f"{prefix}:{ref}"
    if len(bid) <= BLOCK_ID:
        return bid
    return f"{prefix}:#{hashlib.sha256(ref.encode()).hexdigest()[:32]}"


def check_ref(value: str, what: str, limit: int) -> str:
    """Opaque references are never cut: raise when one does not fit."""
    if not value or len(value) > limit:
        raise ValueError(f"{what} must be 1..{limit} characters, got {len(value)}")
    return value


def confirm_dialog(title: str, text: str, confirm: str, deny: str = "Cancel") -> dict[str, Any]:
    """A confirmation dialog object within Slack's limits."""
    return {
        "title": plain(title, CONFIRM_TITLE),
        "text": mrkdwn(text, CONFIRM_TEXT),
        "confirm": plain(confirm, CONFIRM_BUTTON),
        "deny": plain(deny, CONFIRM_BUTTON),
    }


def button(
    text: str,
    action_id: str,
    value: str,
    style: str | None = None,
    confirm: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A button: text is cut; action_id and value (an opaque reference) must fit."""
    el: dict[str, Any] = {
        "type": "button",
        "text": plain(text, BUTTON_TEXT),
        "action_id": check_ref(action_id, "action_id", ACTION_ID),
        "value": check_ref(value, "button value", BUTTON_VALUE),
    }
    if style:
        if style not in ("primary", "danger"):
            raise ValueError(f"button style must be primary or danger, got {style!r}")
        el["style"] = style
    if confirm:
        el["confirm"] = confirm
    return el


def section(text: str, bid: str, limit: int = SECTION_TEXT) -> dict[str, Any]:
    """A mrkdwn section block."""
    return {"type": "section", "block_id": bid, "text": mrkdwn(text, limit)}


def context(texts: Iterable[str], bid: str) -> dict[str, Any]:
    """A context block of mrkdwn elements."""
    elements = [mrkdwn(t, CONTEXT_TEXT) for t in texts][:CONTEXT_ELEMENTS]
    return {"type": "context", "block_id": bid, "elements": elements}


# ---- validation ---------------------------------------------------------------------------


def _err(where: str, msg: str) -> None:
    raise ValueError(f"{where}: {msg}")


def _text(obj: Any, limit: int, where: str, kind: str | None = None) -> None:
    if not isinstance(obj, Mapping) or obj.get("type") not in ("plain_text", "mrkdwn"):
        _err(where, f"not a text object: {obj!r:.80}")
    if kind and obj["type"] != kind:
        _err(where, f"must be {kind}")
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        _err(where, "empty text")
    if len(text) > limit:
        _err(where, f"text is {len(text)} > {limit}")


def _len(value: Any, limit: int, where: str) -> None:
    if not isinstance(value, str) or not value or len(value) > limit:
        _err(where, f"must be a string of 1..{limit} characters")


def _confirm(c: Mapping[str, Any], where: str) -> None:
    _text(c["title"], CONFIRM_TITLE, f"{where}.title", "plain_text")
    _text(c["text"], CONFIRM_TEXT, f"{where}.text")
    _text(c["confirm"], CONFIRM_BUTTON, f"{where}.confirm", "plain_text")
    _text(c["deny"], CONFIRM_BUTTON, f"{where}.deny", "plain_text")


def _option(o: Mapping[str, Any], where: str) -> None:
    _text(o["text"], OPTION_TEXT, f"{where}.text", "plain_text")
    _len(o["value"], OPTION_VALUE, f"{where}.value")


def _button(el: Mapping[str, Any], where: str) -> None:
    _text(el["text"], BUTTON_TEXT, f"{where}.text", "plain_text")
    if "value" in el:
        _len(el["value"], BUTTON_VALUE, f"{where}.value")
    if "url" in el:
        _len(el["url"], BUTTON_URL, f"{where}.url")
    if el.get("style") not in (None, "primary", "danger"):
        _err(where, "bad style")
    if "confirm" in el:
        _confirm(el["confirm"], f"{where}.confirm")


def _placeholder(el: Mapping[str, Any], where: str) -> None:
    if "placeholder" in el:
        _text(el["placeholder"], PLACEHOLDER, f"{where}.placeholder", "plain_text")


def _plain_text_input(el: Mapping[str, Any], where: str) -> None:
    max_len = el.get("max_length", INPUT_MAX_LENGTH)
    if not 1 <= max_len <= INPUT_MAX_LENGTH:
        _err(where, "bad max_length")
    if len(el.get("initial_value", "")) > max_len:
        _err(where, "initial_value longer than max_length")
    _placeholder(el, where)


def _static_select(el: Mapping[str, Any], where: str) -> None:
    options = el.get("options", [])
    if not 1 <= len(options) <= SELECT_OPTIONS:
        _err(where, f"{len(options)} options")
    for i, o in enumerate(options):
        _option(o, f"{where}.options[{i}]")
    values = [o["value"] for o in options]
    if len(set(values)) != len(values):
        _err(where, "duplicate option values")
    if "initial_option" in el and el["initial_option"] not in options:
        _err(where, "initial_option is not one of the options")
    _placeholder(el, where)


_ELEMENTS: dict[str, Callable[[Mapping[str, Any], str], None]] = {
    "button": _button,
    "plain_text_input": _plain_text_input,
    "static_select": _static_select,
}


def _element(el: Mapping[str, Any], where: str) -> None:
    kind = el.get("type")
    if "action_id" in el:
        _len(el["action_id"], ACTION_ID, f"{where}.action_id")
    check = _ELEMENTS.get(kind) if isinstance(kind, str) else None
    if check is None:
        _err(where, f"unsupported element type {kind!r}")
    else:
        check(el, where)


def _section(b: Mapping[str, Any], where: str, surface: str) -> None:
    if "text" not in b and "fields" not in b:
        _err(where, "section without text or fields")
    if "text" in b:
        _text(b["text"], SECTION_TEXT, f"{where}.text")
    fields = b.get("fields", [])
    if len(fields) > SECTION_FIELDS:
        _err(where, "too many fields")
    for i, f in enumerate(fields):
        _text(f, SECTION_FIELD_TEXT, f"{where}.fields[{i}]")
    if "accessory" in b:
        _element(b["accessory"], f"{where}.accessory")


def _header(b: Mapping[str, Any], where: str, surface: str) -> None:
    _text(b["text"], HEADER_TEXT, f"{where}.text", "plain_text")


def _context(b: Mapping[str, Any], where: str, surface: str) -> None:
    els = b.get("elements", [])
    if not 1 <= len(els) <= CONTEXT_ELEMENTS:
        _err(where, f"{len(els)} context elements")
    for i, e in enumerate(els):
        _text(e, CONTEXT_TEXT, f"{where}.elements[{i}]")


def _actions(b: Mapping[str, Any], where: str, surface: str) -> None:
    els = b.get("elements", [])
    if not 1 <= len(els) <= ACTIONS_ELEMENTS:
        _err(where, f"{len(els)} action elements")
    ids = [e.get("action_id") for e in els]
    if len(set(ids)) != len(ids):
        _err(where, "duplicate action_id in one block")
    for i, e in enumerate(els):
        _element(e, f"{where}.elements[{i}]")


def _divider(b: Mapping[str, Any], where: str, surface: str) -> None:
    pass


def _input(b: Mapping[str, Any], where: str, surface: str) -> None:
    if surface != "modal":
        _err(where, "input blocks only belong in modals")
    _text(b["label"], INPUT_LABEL, f"{where}.label", "plain_text")
    if "hint" in b:
        _text(b["hint"], INPUT_HINT, f"{where}.hint", "plain_text")
    _element(b["element"], f"{where}.element")


def _markdown(b: Mapping[str, Any], where: str, surface: str) -> None:
    if surface != "message":
        _err(where, "markdown blocks only belong in messages")
    _len(b.get("text"), MARKDOWN_TEXT, f"{where}.text")
    if not b["text"].strip():
        _err(where, "empty text")


def _table(b: Mapping[str, Any], where: str, surface: str) -> None:
    if surface != "message":
        _err(where, "table blocks only belong in messages")
    rows = b.get("rows")
    if not isinstance(rows, list) or not 1 <= len(rows) <= TABLE_ROWS:
        raise ValueError(f"{where}: must have 1..{TABLE_ROWS} rows")
    for i, row in enumerate(rows):
        if not isinstance(row, list) or not 1 <= len(row) <= TABLE_COLUMNS:
            _err(f"{where}.rows[{i}]", f"must have 1..{TABLE_COLUMNS} cells")
        for j, cell in enumerate(row):
            if not isinstance(cell, Mapping) or cell.get("type") != "raw_text":
                _err(f"{where}.rows[{i}][{j}]", "must be a raw_text cell")
            _len(cell.get("text"), TABLE_CELL, f"{where}.rows[{i}][{j}].text")
    if len(b.get("column_settings", [])) > TABLE_COLUMNS:
        _err(where, "too many column_settings")


_BLOCKS: dict[str, Callable[[Mapping[str, Any], str, str], None]] = {
    "section": _section,
    "header": _header,
    "context": _context,
    "actions": _actions,
    "divider": _divider,
    "input": _input,
    "markdown": _markdown,
    "table": _table,
}


def _block(b: Mapping[str, Any], where: str, surface: str) -> None:
    kind = b.get("type")
    if "block_id" in b:
        _len(b["block_id"], BLOCK_ID, f"{where}.block_id")
    check = _BLOCKS.get(kind) if isinstance(kind, str) else None
    if check is None:
        _err(where, f"unsupported block type {kind!r}")
    else:
        check(b, where, surface)


def _blocks(blocks: list[Mapping[str, Any]], limit: int, surface: str) -> None:
    if len(blocks) > limit:
        _err(surface, f"{len(blocks)} blocks > {limit}")
    ids = [b["block_id"] for b in blocks if "block_id" in b]
    if len(set(ids)) != len(ids):
        _err(surface, "duplicate block_id")
    for i, b in enumerate(blocks):
        _block(b, f"{surface}.blocks[{i}]", surface)
    markdown = sum(len(b["text"]) for b in blocks if b.get("type") == "markdown")
    if markdown > MARKDOWN_TEXT:
        _err(surface, f"markdown blocks hold {markdown} > {MARKDOWN_TEXT} characters")
    if sum(1 for b in blocks if b.get("type") == "table") > MESSAGE_TABLES:
        _err(surface, "more than one table block")


def validate_message(message: Mapping[str, Any] | list[Mapping[str, Any]]) -> None:
    """Raise ValueError if a message (or its list of blocks) breaks a Slack limit."""
    if isinstance(message, Mapping):
        text = message.get("text")
        if not isinstance(text, str) or not text.strip() or len(text) > MESSAGE_TEXT:
            _err("message", "fallback text must be 1..4000 characters")
        blocks = message.get("blocks", [])
    else:
        blocks = message
    _blocks(list(blocks), MESSAGE_BLOCKS, "message")


def validate_view(view: Mapping[str, Any]) -> None:
    """Raise ValueError if a modal or home view breaks a Slack limit."""
    kind = view.get("type")
    if kind not in ("modal", "home"):
        _err("view", f"bad type {kind!r}")
    if kind == "modal":
        _text(view["title"], MODAL_TITLE, "view.title", "plain_text")
        for key in ("submit", "close"):
            if key in view:
                _text(view[key], MODAL_BUTTON, f"view.{key}", "plain_text")
        if any(b.get("type") == "input" for b in view["blocks"]) and "submit" not in view:
            _err("view", "a modal with inputs needs a submit button")
    if "private_metadata" in view and len(view["private_metadata"]) > PRIVATE_METADATA:
        _err("view", "private_metadata too long")
    if "callback_id" in view:
        _len(view["callback_id"], CALLBACK_ID, "view.callback_id")
    _blocks(list(view.get("blocks", [])), VIEW_BLOCKS, "modal" if kind == "modal" else "home")
