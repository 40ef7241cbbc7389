"""Read git's on-disk formats the way git does: config files, and gitlinks in the index.

Both readers follow git's own parsers (``config.c``, ``read-cache.c``) closely enough to fail
closed: whatever git would read differently, or reject, comes back as None.
"""

from __future__ import annotations

_SPACE = " \t"
_BOM = b"\xef\xbb\xbf"
_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}
_GITLINK = 0o160000


def _is_key_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "-")


class _OddConfigError(Exception):
    """Raised inside the config reader for anything git would read otherwise or reject."""


def parse_config(data: bytes) -> tuple[tuple[str, str], ...] | None:
    """Return a config file's (``section[.sub].key``, value) pairs, or None if it is odd."""
    text = data.removeprefix(_BOM).decode("latin-1").replace("\r\n", "\n")
    if "\r" in text or "\0" in text:
        return None
    try:
        return tuple(_entries(text))
    except (_OddConfigError, IndexError):
        return None


def _entries(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    section: str | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\n":
            i += 1
        elif c in "#;":
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif c == "[":
            section, i = _header(text, i + 1)
        elif c.isascii() and c.isalpha() and section is not None:
            key, value, i = _key_value(text, i)
            out.append((f"{section}.{key}", value))
        else:
            raise _OddConfigError
    return out


def _header(text: str, i: int) -> tuple[str, int]:
    start = i
    while text[i] != "]":
        if text[i] in _SPACE:
            return _extended_header(text, text[start:i].lower(), i)
        if not (_is_key_char(text[i]) or text[i] == "."):
            raise _OddConfigError
        i += 1
    if i == start:
        raise _OddConfigError
    return text[start:i].lower(), i + 1


def _extended_header(text: str, name: str, i: int) -> tuple[str, int]:
    while text[i] in _SPACE:
        i += 1
    if text[i] != '"' or not name:
        raise _OddConfigError
    i += 1
    sub: list[str] = []
    while text[i] != '"':
        if text[i] == "\n":
            raise _OddConfigError
        if text[i] == "\\":
            i += 1
            if text[i] == "\n":
                raise _OddConfigError
        sub.append(text[i])
        i += 1
    if text[i + 1] != "]":
        raise _OddConfigError
    return f"{name}.{''.join(sub)}", i + 2


def _key_value(text: str, i: int) -> tuple[str, str, int]:
    start = i
    while i < len(text) and _is_key_char(text[i]):
        i += 1
    key = text[start:i].lower()
    while i < len(text) and text[i] in _SPACE:
        i += 1
    if i >= len(text) or text[i] == "\n":
        return key, "true", i + 1
    if text[i] != "=":
        raise _OddConfigError
    value, i = _value(text, i + 1)
    return key, value, i


def _value(text: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    quote = comment = False
    spaces = 0
    while i < len(text):
        c = text[i]
        i += 1
        if c == "\n":
            if quote:
                raise _OddConfigError
            return "".join(out), i
        if comment:
            continue
        if c in _SPACE and not quote:
            spaces += 1 if out else 0
            continue
        if c in "#;" and not quote:
            comment = True
            continue
        out.extend(" " * spaces)
        spaces = 0
        if c == "\\":
            escaped = text[i] if i < len(text) else "\n"
            i += 1
            if escaped != "\n":
                if escaped not in _ESCAPES:
                    raise _OddConfigError
                out.append(_ESCAPES[escaped])
        elif c == '"':
            quote = not quote
        else:
            out.append(c)
    if quote:
        raise _OddConfigError
    return "".join(out), i


def index_gitlinks(data: bytes, hash_len: int) -> tuple[str, ...] | None:
    """Return the paths of gitlinks (submodules) in an index file, or None if it is odd."""
    if data[:4] != b"DIRC":
        return None
    version = int.from_bytes(data[4:8], "big")
    if version not in (2, 3, 4):
        return None
    # Fast path: no gitlink mode anywhere and no split index ("link" extension).
    if _GITLINK.to_bytes(4, "big") not in data and b"link" not in data:
        return ()
    try:
        return _walk_index(data, version, hash_len)
    except (IndexError, ValueError):
        return None


def _walk_index(data: bytes, version: int, hash_len: int) -> tuple[str, ...] | None:
    count = int.from_bytes(data[8:12], "big")
    offset, previous = 12, b""
    links: list[str] = []
    for _ in range(count):
        mode = int.from_bytes(data[offset + 24 : offset + 28], "big")
        flags = int.from_bytes(data[offset + 40 + hash_len : offset + 42 + hash_len], "big")
        start = offset + 42 + hash_len + (2 if flags & 0x4000 else 0)
        if version == 4:
            strip, start = _varint(data, start)
            end = data.index(b"\0", start)
            if strip > len(previous):
                return None
            name = previous[: len(previous) - strip] + data[start:end]
            offset = end + 1
        else:
            end = data.index(b"\0", start)
            name = data[start:end]
            offset += (end - offset + 8) & ~7
        previous = name
        if mode == _GITLINK:
            links.append(name.decode("utf-8", "surrogateescape"))
    while offset + 8 <= len(data) - hash_len:
        if data[offset : offset + 4] == b"link":
            return None  # a split index keeps entries in another file
        offset += 8 + int.from_bytes(data[offset + 4 : offset + 8], "big")
    return tuple(links)


def _varint(data: bytes, i: int) -> tuple[int, int]:
    c = data[i]
    i += 1
    value = c & 127
    while c & 128:
        value += 1
        c = data[i]
        i += 1
        value = (value << 7) + (c & 127)
    return value, i
