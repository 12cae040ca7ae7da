"""Griffe extension for the API reference: read Trivium's docstrings as the code writes them.

The docstrings are Google style with two habits of Sphinx's Napoleon that griffe's
Google parser does not share:

- the doctest section is headed ``Example:`` (griffe knows only ``Examples:``; it
  would render the doctest lines as Markdown text);
- parameters that share a description are listed on one line (``min_size, max_size:
  ...``; griffe reads that as one parameter named ``min_size, max_size``);
- cross-references are reST roles (``:class:`~trivium.data.IterPipe```,
  ``:func:`decode_jpeg```), which Markdown would show with the role's name.

This extension rewrites these when the docstrings are loaded, before they are parsed:
``Example:`` becomes ``Examples:``, a line of several parameters becomes one entry per
parameter with the shared description, and a role becomes an optional autorefs link,
which is a link where its target is in the reference and plain code elsewhere (torch's
objects, private modules). The package sources stay as they are.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE_HEADING = re.compile(r"^(?P<indent>[ \t]*)Example:[ \t]*$", re.MULTILINE)
_PARAMETERS_HEADING = re.compile(
    r"^[ \t]*(?:Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters):"
    r"[ \t]*$"
)
_GROUPED_ITEM = re.compile(
    r"^(?P<indent>[ \t]+)(?P<names>\*{0,2}\w+(?:,[ \t]*\*{0,2}\w+)+):(?P<rest>.*)$"
)
# reST's escaped space after a role (":class:`Name`\\ s") joins the suffix: dropped with it.
_ROLE = re.compile(
    r":(?:py:)?(?:class|meth|func|mod|attr|data|exc|obj):`(?P<target>[^`]+)`(?:\\ )?"
)


def _qualify(target: str, obj: griffe.Object) -> str:
    """The full path a role's target names, looked up from the object that holds the docstring."""
    if target.startswith(("trivium.", "torch.", "numpy.", "pyarrow.")):
        return target
    scope: griffe.Object | None = obj if obj.is_class or obj.is_module else obj.parent
    while scope is not None:
        head = target.split(".", 1)[0]
        if head in scope.members:
            return f"{scope.path}.{target}"
        scope = scope.parent
    return target


def _link(match: re.Match[str], obj: griffe.Object) -> str:
    target = match["target"].strip()
    short = target.startswith("~")
    target = target.lstrip("~").rstrip("()")
    title = target.rsplit(".", 1)[-1] if short else target
    identifier = _qualify(target, obj)
    return f'<autoref identifier="{identifier}" optional><code>{title}</code></autoref>'


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _split_grouped_parameters(text: str) -> str:
    """``a, b: shared`` in a parameters section becomes ``a: shared`` and ``b: shared``."""
    lines = text.split("\n")
    out: list[str] = []
    section_indent: int | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if _PARAMETERS_HEADING.match(line):
            section_indent = _indent(line)
        elif line.strip() and section_indent is not None and _indent(line) <= section_indent:
            section_indent = None
        match = _GROUPED_ITEM.match(line) if section_indent is not None else None
        if match is None:
            out.append(line)
            continue
        body = []
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > _indent(line)):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():  # blank lines after the item stay after it
            body.pop()
            i -= 1
        for name in match["names"].split(","):
            out.append(f"{match['indent']}{name.strip()}:{match['rest']}")
            out.extend(body)
    return "\n".join(out)


def rewrite(text: str, obj: griffe.Object) -> str:
    """The docstring ``text`` of ``obj`` with Google's ``Examples:`` heading and Markdown links.

    Example:
        >>> module = griffe.Module("m")
        >>> rewrite("Example:\\n    >>> 1\\n    1", module).splitlines()[0]
        'Examples:'
        >>> rewrite(":class:`~trivium.data.IterPipe`", module)
        '<autoref identifier="trivium.data.IterPipe" optional><code>IterPipe</code></autoref>'
        >>> rewrite("Args:\\n  a, b: sizes\\n    of it.\\n  c: other", module).splitlines()
        ['Args:', '  a: sizes', '    of it.', '  b: sizes', '    of it.', '  c: other']
    """
    text = _EXAMPLE_HEADING.sub(r"\g<indent>Examples:", text)
    text = _split_grouped_parameters(text)
    return _ROLE.sub(lambda match: _link(match, obj), text)


class TriviumDocstrings(griffe.Extension):
    """Applies :func:`rewrite` to every docstring once the object tree is complete."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring in place."""
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value, obj)
