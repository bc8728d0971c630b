"""Block Kit limits, enforced in one place as Slack enforces them.

Each check returns human-readable errors in Slack's own style, a message followed by a JSON
pointer to the offending field, e.g. ``must be at most 3000 characters
[json-pointer:/blocks/0/text/text]``. Messages are refused with ``invalid_blocks``; views with
``invalid_arguments`` (what Slack answers for views.open/update/push/publish), see webapi.py.
"""

from __future__ import annotations

from typing import Any

MAX_MESSAGE_TEXT = 40_000
MAX_MESSAGE_BLOCKS = 50
MAX_VIEW_BLOCKS = 100

BLOCK_TYPES = {
    "section",
    "divider",
    "image",
    "actions",
    "context",
    "input",
    "file",
    "header",
    "video",
    "rich_text",
    "markdown",
    "table",
}
MAX_MARKDOWN_TEXT = 12_000  # across every markdown block of one message
MAX_TABLE_ROWS = 100
MAX_TABLE_CELLS = 20
TEXT_TYPES = {"plain_text", "mrkdwn"}
SELECTS = {"static_select", "multi_static_select"}
OPTION_LISTS = {"static_select": 100, "multi_static_select": 100, "overflow": 5}
OPTION_LISTS |= {"checkboxes": 10, "radio_buttons": 10}


class _Checker:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def fail(self, path: str, message: str) -> None:
        self.errors.append(f"{message} [json-pointer:{path}]")

    def max_len(self, value: Any, limit: int, path: str) -> None:
        if isinstance(value, str) and len(value) > limit:
            self.fail(path, f"must be at most {limit} characters (got {len(value)})")

    def text(
        self, obj: Any, path: str, limit: int, *, plain: bool = False, required: bool = True
    ) -> None:
        if obj is None:
            if required:
                self.fail(path, "is required")
            return
        if not isinstance(obj, dict):
            self.fail(path, "must be a text object")
            return
        kind = obj.get("type")
        if kind not in TEXT_TYPES or (plain and kind != "plain_text"):
            allowed = "plain_text" if plain else "plain_text or mrkdwn"
            self.fail(f"{path}/type", f"must be {allowed}")
        text = obj.get("text")
        if not isinstance(text, str) or text == "":
            self.fail(f"{path}/text", "must be a non-empty string")
            return
        self.max_len(text, limit, f"{path}/text")

    def blocks(self, blocks: Any, path: str, limit: int) -> None:
        if not isinstance(blocks, list):
            self.fail(path, "must be an array of blocks")
            return
        if len(blocks) > limit:
            self.fail(path, f"no more than {limit} items allowed (got {len(blocks)})")
        seen: set[str] = set()
        for i, block in enumerate(blocks):
            self.block(block, f"{path}/{i}", seen)

    def block(self, block: Any, path: str, seen_ids: set[str]) -> None:
        if not isinstance(block, dict):
            self.fail(path, "must be an object")
            return
        kind = block.get("type")
        if kind not in BLOCK_TYPES:
            self.fail(f"{path}/type", f"unsupported block type {kind!r}")
            return
        block_id = block.get("block_id")
        if block_id is not None:
            self.max_len(block_id, 255, f"{path}/block_id")
            if block_id in seen_ids:
                self.fail(f"{path}/block_id", f"duplicate block_id {block_id!r}")
            seen_ids.add(block_id)
        getattr(self, f"block_{kind}", lambda b, p: None)(block, path)

    def block_section(self, block: dict[str, Any], path: str) -> None:
        if block.get("text") is None and not block.get("fields"):
            self.fail(path, "must provide text or fields")
        self.text(block.get("text"), f"{path}/text", 3000, required=False)
        fields = block.get("fields")
        if fields is not None:
            if not isinstance(fields, list) or len(fields) > 10:
                self.fail(f"{path}/fields", "must be an array of at most 10 items")
            else:
                for i, item in enumerate(fields):
                    self.text(item, f"{path}/fields/{i}", 2000)
        if block.get("accessory") is not None:
            self.element(block["accessory"], f"{path}/accessory")

    def block_header(self, block: dict[str, Any], path: str) -> None:
        self.text(block.get("text"), f"{path}/text", 150, plain=True)

    def block_image(self, block: dict[str, Any], path: str) -> None:
        self.image(block, path)
        self.text(block.get("title"), f"{path}/title", 2000, plain=True, required=False)

    def image(self, obj: dict[str, Any], path: str) -> None:
        if not obj.get("image_url") and not obj.get("slack_file"):
            self.fail(f"{path}/image_url", "is required")
        self.max_len(obj.get("image_url"), 3000, f"{path}/image_url")
        if not obj.get("alt_text"):
            self.fail(f"{path}/alt_text", "is required")
        self.max_len(obj.get("alt_text"), 2000, f"{path}/alt_text")

    def elements(self, block: dict[str, Any], path: str, most: int) -> list[Any]:
        """The block's `elements`: a non-empty array of at most `most` items (else [])."""
        elements = block.get("elements")
        if not isinstance(elements, list) or not elements:
            self.fail(f"{path}/elements", "must be a non-empty array")
            return []
        if len(elements) > most:
            self.fail(
                f"{path}/elements", f"no more than {most} items allowed (got {len(elements)})"
            )
        return elements

    def block_context(self, block: dict[str, Any], path: str) -> None:
        for i, element in enumerate(self.elements(block, path, 10)):
            sub = f"{path}/elements/{i}"
            if isinstance(element, dict) and element.get("type") == "image":
                self.image(element, sub)
            else:
                self.text(element, sub, 3000)

    def block_actions(self, block: dict[str, Any], path: str) -> None:
        seen: set[str] = set()
        for i, element in enumerate(self.elements(block, path, 25)):
            self.element(element, f"{path}/elements/{i}")
            action_id = element.get("action_id") if isinstance(element, dict) else None
            if action_id is not None:
                if action_id in seen:
                    self.fail(f"{path}/elements/{i}/action_id", f"duplicate {action_id!r}")
                seen.add(action_id)

    def block_input(self, block: dict[str, Any], path: str) -> None:
        self.text(block.get("label"), f"{path}/label", 2000, plain=True)
        self.text(block.get("hint"), f"{path}/hint", 2000, plain=True, required=False)
        if not isinstance(block.get("element"), dict):
            self.fail(f"{path}/element", "is required")
            return
        self.element(block["element"], f"{path}/element")

    def block_markdown(self, block: dict[str, Any], path: str) -> None:
        if not isinstance(block.get("text"), str):
            self.fail(f"{path}/text", "is required")
        self.max_len(block.get("text"), 12000, f"{path}/text")

    def block_table(self, block: dict[str, Any], path: str) -> None:
        rows = block.get("rows")
        if not isinstance(rows, list) or not rows:
            self.fail(f"{path}/rows", "is required")
            return
        if len(rows) > MAX_TABLE_ROWS:
            self.fail(f"{path}/rows", f"no more than {MAX_TABLE_ROWS} items allowed")
        for i, row in enumerate(rows):
            if not isinstance(row, list) or not row or len(row) > MAX_TABLE_CELLS:
                self.fail(f"{path}/rows/{i}", f"must be an array of 1..{MAX_TABLE_CELLS} cells")
                continue
            for j, cell in enumerate(row):
                ok = isinstance(cell, dict) and cell.get("type") in ("raw_text", "rich_text")
                if not ok:
                    self.fail(f"{path}/rows/{i}/{j}", "must be a raw_text or rich_text cell")
                elif cell["type"] == "raw_text" and not isinstance(cell.get("text"), str):
                    self.fail(f"{path}/rows/{i}/{j}/text", "is required")
        settings = block.get("column_settings")
        if settings is not None and (not isinstance(settings, list) or len(settings) > 20):
            self.fail(f"{path}/column_settings", "must be an array of at most 20 items")

    def element(self, element: Any, path: str) -> None:
        if not isinstance(element, dict) or not isinstance(element.get("type"), str):
            self.fail(path, "must be an element object with a type")
            return
        kind = element["type"]
        self.max_len(element.get("action_id"), 255, f"{path}/action_id")
        self.text(element.get("placeholder"), f"{path}/placeholder", 150, required=False)
        if element.get("confirm") is not None:
            self.confirm(element["confirm"], f"{path}/confirm")
        if kind == "button":
            self.text(element.get("text"), f"{path}/text", 75, plain=True)
            self.max_len(element.get("value"), 2000, f"{path}/value")
            self.max_len(element.get("url"), 3000, f"{path}/url")
            if element.get("style") not in (None, "primary", "danger"):
                self.fail(f"{path}/style", "must be primary or danger")
        elif kind in OPTION_LISTS:
            self.options(element, path, OPTION_LISTS[kind])
        elif kind == "plain_text_input":
            for key in ("max_length", "min_length"):
                value = element.get(key)
                if value is not None and (not isinstance(value, int) or not 0 <= value <= 3000):
                    self.fail(f"{path}/{key}", "must be an integer between 0 and 3000")
            self.max_len(element.get("initial_value"), 3000, f"{path}/initial_value")
        elif kind == "image":
            self.image(element, path)

    def options(self, element: dict[str, Any], path: str, limit: int) -> None:
        groups = element.get("option_groups")
        lists: list[tuple[str, Any]] = []
        if groups is not None:
            if not isinstance(groups, list) or len(groups) > 100:
                self.fail(f"{path}/option_groups", "must be an array of at most 100 groups")
                return
            for g, group in enumerate(groups):
                lists.append((f"{path}/option_groups/{g}/options", (group or {}).get("options")))
        elif "options" in element or element["type"] not in SELECTS:
            lists.append((f"{path}/options", element.get("options")))
        for list_path, options in lists:
            if not isinstance(options, list) or not options:
                self.fail(list_path, "must be a non-empty array")
                continue
            if len(options) > limit:
                self.fail(list_path, f"no more than {limit} items allowed (got {len(options)})")
            for i, option in enumerate(options):
                self.option(option, f"{list_path}/{i}", element["type"])

    def option(self, option: Any, path: str, kind: str) -> None:
        if not isinstance(option, dict):
            self.fail(path, "must be an option object")
            return
        in_select = kind in SELECTS or kind == "overflow"
        self.text(option.get("text"), f"{path}/text", 75, plain=in_select)
        if not isinstance(option.get("value"), str):
            self.fail(f"{path}/value", "is required")
        self.max_len(option.get("value"), 150, f"{path}/value")

    def confirm(self, confirm: Any, path: str) -> None:
        if not isinstance(confirm, dict):
            self.fail(path, "must be a confirmation dialog object")
            return
        self.text(confirm.get("title"), f"{path}/title", 100, plain=True)
        self.text(confirm.get("text"), f"{path}/text", 300)
        self.text(confirm.get("confirm"), f"{path}/confirm", 30, plain=True)
        self.text(confirm.get("deny"), f"{path}/deny", 30, plain=True)


def check_message_blocks(blocks: Any) -> list[str]:
    """Errors for a message's blocks (empty when valid)."""
    checker = _Checker()
    if blocks is not None:
        checker.blocks(blocks, "/blocks", MAX_MESSAGE_BLOCKS)
    if isinstance(blocks, list):
        kinds = [b for b in blocks if isinstance(b, dict)]
        markdown = sum(len(str(b.get("text", ""))) for b in kinds if b.get("type") == "markdown")
        if markdown > MAX_MARKDOWN_TEXT:
            checker.fail(
                "/blocks", f"markdown blocks must hold at most {MAX_MARKDOWN_TEXT} characters"
            )
        if sum(1 for b in kinds if b.get("type") == "table") > 1:
            checker.fail("/blocks", "only_one_table_allowed")
    return checker.errors


def check_view(view: Any) -> list[str]:
    """Errors for a modal or home view (empty when valid)."""
    checker = _Checker()
    if not isinstance(view, dict):
        checker.fail("/view", "must be a view object")
        return checker.errors
    kind = view.get("type")
    if kind not in ("modal", "home"):
        checker.fail("/view/type", "must be modal or home")
    if kind == "modal":
        checker.text(view.get("title"), "/view/title", 24, plain=True)
        checker.text(view.get("submit"), "/view/submit", 24, plain=True, required=False)
        checker.text(view.get("close"), "/view/close", 24, plain=True, required=False)
        blocks = view.get("blocks") or []
        has_input = any(isinstance(b, dict) and b.get("type") == "input" for b in blocks)
        if has_input and view.get("submit") is None:
            checker.fail("/view/submit", "is required when the view has input blocks")
    checker.max_len(view.get("private_metadata"), 3000, "/view/private_metadata")
    checker.max_len(view.get("callback_id"), 255, "/view/callback_id")
    checker.max_len(view.get("external_id"), 255, "/view/external_id")
    checker.blocks(view.get("blocks"), "/view/blocks", MAX_VIEW_BLOCKS)
    return checker.errors
