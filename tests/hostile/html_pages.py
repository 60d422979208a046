"""Whether a page shows a hostile name as text: its scripts split as a browser splits
them, and the name escaped wherever it is not inside a script.

A browser ends a ``<script>`` element at the first ``</script`` that its tokenizer sees in
the "script data" states, which include the escaped states that ``<!--`` and ``<script``
open inside a script (the HTML standard, 13.2.5.4-13.2.5.27). :func:`split_page` follows
those states, so a name that opens them inside a script shows up here as it would in a
browser: a script that runs past its intended end.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from html.parser import HTMLParser

from .oracles import expect, fail

_DELIMITERS = "\t\n\f\r />"
_RAW_TEXT_START = re.compile(r"<(script|style|title|textarea)(?=[\t\n\f\r />])", re.IGNORECASE)


@dataclass(frozen=True)
class RawTextElement:
    """An element whose content is not markup: its name, start tag and content."""

    name: str
    start_tag: str
    content: str


def _tag_at(text: str, position: int, name: str) -> bool:
    end = position + len(name)
    return text[position:end].lower() == name and end < len(text) and text[end] in _DELIMITERS


def _script_end(text: str, position: int) -> int:
    """Where the script whose content starts at ``position`` ends: its ``</script``, or the
    end of ``text``."""
    state, dashes = "data", 0
    while position < len(text):
        if text.startswith("</", position) and _tag_at(text, position + 2, "script"):
            if state in ("data", "escaped"):
                return position
            state, dashes, position = "escaped", 0, position + len("</script")
            continue
        if state == "data" and text.startswith("<!--", position):
            state, dashes, position = "escaped", 2, position + 4
            continue
        character = text[position]
        if state != "data":
            if character == "-":
                dashes += 1
            elif character == ">" and dashes >= 2:
                state, dashes = "data", 0
            elif character == "<" and state == "escaped" and _tag_at(text, position + 1, "script"):
                state, dashes, position = "double escaped", 0, position + len("<script")
                continue
            else:
                dashes = 0
        position += 1
    return position


def _start_tag_end(text: str, position: int) -> int:
    """The position after the ``>`` that ends the start tag going on at ``position``."""
    quote = None
    while position < len(text):
        character = text[position]
        if quote:
            quote = None if character == quote else quote
        elif character in "\"'":
            quote = character
        elif character == ">":
            return position + 1
        position += 1
    return position


def split_page(page: str) -> tuple[list[RawTextElement], str]:
    """The script, style, title and textarea elements of ``page`` as a browser splits them,
    and the page without them (the markup and text around them)."""
    elements: list[RawTextElement] = []
    rest: list[str] = []
    position = 0
    while (start := page.find("<", position)) != -1:
        if page.startswith("<!--", start):
            end = page.find("-->", start + 4)
            end = len(page) if end == -1 else end + 3
            rest.append(page[position:end])
            position = end
            continue
        match = _RAW_TEXT_START.match(page, start)
        if match is None:
            rest.append(page[position : start + 1])
            position = start + 1
            continue
        name = match.group(1).lower()
        content_start = _start_tag_end(page, match.end())
        if name == "script":
            content_end = _script_end(page, content_start)
        else:
            found = re.compile(f"</{name}(?=[\t\n\f\r />])", re.IGNORECASE).search(
                page, content_start
            )
            content_end = len(page) if found is None else found.start()
        elements.append(
            RawTextElement(name, page[start:content_start], page[content_start:content_end])
        )
        rest.append(page[position:start])
        end_tag = page.find(">", content_end)
        position = len(page) if end_tag == -1 else end_tag + 1
    rest.append(page[position:])
    return elements, "".join(rest)


class _TextCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def visible_text(markup: str) -> str:
    """The text of ``markup`` (no raw-text elements in it), character references decoded."""
    collector = _TextCollector()
    collector.feed(markup)
    collector.close()
    return "".join(collector.parts)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in (*value.keys(), *value.values()) for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def check_markup(page: str, name: str, where: str) -> tuple[str, list[str]]:
    """Check that ``page`` keeps ``name`` out of its markup: every script ends where its
    writer meant it to (no ``</script`` inside one), JSON scripts parse, and the name is
    never written unescaped outside scripts. Returns the page's text and the strings of
    its JSON scripts."""
    elements, markup = split_page(page)
    data: list[str] = []
    for script in (element for element in elements if element.name == "script"):
        if ran_on := re.search("</script", script.content, re.IGNORECASE):
            fail(
                f"{where}: with the name {name[:40]!r} in the page, a script element runs "
                f"past its end, into {script.content[ran_on.start() :][:40]!r}"
            )
        if "application/json" in script.start_tag:
            try:
                data += _strings(json.loads(script.content))
            except ValueError as error:
                fail(f"{where}: a JSON script does not parse ({error})")
    if set(name) & set("<>&\"'"):
        expect(name not in markup, f"{where}: the name {name[:40]!r} is written as markup")
    return visible_text(markup), data


def displayable(name: str) -> str:
    """``name`` as a UTF-8 page can hold it: each lone surrogate as U+FFFD."""
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in name)


def shows(text: str, name: str) -> bool:
    """Whether ``text`` holds ``name``, or its :func:`displayable` form."""
    return name in text or displayable(name) in text


def check_page(page: str, name: str, where: str, *, shown_as_text: bool = True) -> None:
    """``page`` (a whole report) shows ``name`` as text: :func:`check_markup`, a JSON
    script holds the name, and (``shown_as_text``) so does the page's text."""
    text, data = check_markup(page, name, where)
    expect(
        any(shows(item, name) for item in data),
        f"{where}: no JSON script holds the name {name[:40]!r}",
    )
    if shown_as_text:
        expect(shows(text, name), f"{where}: the page's text does not show the name {name[:40]!r}")
