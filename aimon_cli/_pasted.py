"""Images and PDFs at the prompt: from the clipboard (Ctrl-V), or a pasted or dropped path.

Each shows in the input box as a placeholder (`[Image #1]`, `[PDF #2 spec.pdf]`) and is
sent with the prompt as an image or document block; a placeholder deleted from the box takes
its attachment with it. A terminal drops a file as its path (quoted, escaped or as a
`file://` URL): a paste that is exactly one image or PDF file is taken as that file.
"""

from __future__ import annotations

import base64
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:  # the REPL imports this module before the model layer has loaded
    from aimon_core.llm import ContentBlock, ImageBlock

IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
               ".gif": "image/gif", ".webp": "image/webp"}
MAX_IMAGE_BYTES = 3_750_000  # the Anthropic API's 5 MB of base64
MAX_PDF_BYTES = 32 * 1024 * 1024
_CLIPBOARD_SECONDS = 3


class AttachError(Exception):
    """A file or the clipboard cannot be attached; the message says why."""


class Attachments:
    """The images and documents attached to the prompt being edited, by placeholder."""

    def __init__(self) -> None:
        self._blocks: dict[str, ContentBlock] = {}
        self._count = 0

    def add(self, block: ContentBlock, name: str = "") -> str:
        """Keep `block`; return the placeholder that stands for it in the input box."""
        from aimon_core.llm import ImageBlock

        self._count += 1
        kind = "Image" if isinstance(block, ImageBlock) else "PDF"
        placeholder = f"[{kind} #{self._count}{' ' + name if name else ''}]"
        self._blocks[placeholder] = block
        return placeholder

    def pasted(self, text: str, say: Callable[[str, str], None]) -> str | None:
        """Take a paste that names an image or PDF file; return its placeholder ("" when
        the file cannot be sent, said with `say`), or None when the paste is not one."""
        path = pasted_file(text)
        if path is None:
            return None
        try:
            block = file_block(path)
        except AttachError as exc:
            say(f"Not attached: {exc}.", "red")
            return ""
        return self.add(block, path.name if path.suffix.lower() == ".pdf" else "")

    def clipboard(self, say: Callable[[str, str], None]) -> str:
        """Take the clipboard's image; return its placeholder ("" when there is none: said)."""
        try:
            block = clipboard_image()
        except AttachError as exc:
            say(f"No image attached: {exc}.", "yellow")
            return ""
        return self.add(block)

    def take(self, text: str) -> tuple[ContentBlock, ...]:
        """Return the blocks whose placeholder is still in `text`; forget them all."""
        blocks = tuple(block for placeholder, block in self._blocks.items()
                       if placeholder in text)
        self._blocks.clear()
        self._count = 0
        return blocks


def pasted_file(text: str) -> Path | None:
    """Return the image or PDF file a paste names (a dropped file), or None."""
    raw = text.strip()
    if not raw or "\n" in raw or len(raw) > 4096:
        return None
    if raw.startswith("file://"):
        raw = unquote(urlsplit(raw).path)
    else:
        try:
            words = shlex.split(raw)  # 'a b.png', a\ b.png
        except ValueError:
            return None
        if len(words) != 1:
            return None
        raw = words[0]
    path = Path(raw).expanduser()
    suffix = path.suffix.lower()
    if (suffix in IMAGE_TYPES or suffix == ".pdf") and path.is_file():
        return path
    return None


def file_block(path: Path) -> ContentBlock:
    """Return the image or document block of a file; AttachError if it cannot be sent."""
    from aimon_core.llm import DocumentBlock

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AttachError(f"cannot read {path}: {exc.strerror or exc}") from None
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        if not data.startswith(b"%PDF"):
            raise AttachError(f"{path.name} is not a PDF document")
        if len(data) > MAX_PDF_BYTES:
            raise AttachError(f"{path.name} is {len(data) // (1024 * 1024)} MB; PDFs up to "
                              f"{MAX_PDF_BYTES // (1024 * 1024)} MB can be sent")
        return DocumentBlock(media_type="application/pdf", title=path.name,
                             data=base64.b64encode(data).decode("ascii"))
    return image_block(data, IMAGE_TYPES[suffix], path.name)


def image_block(data: bytes, media_type: str, name: str = "the image") -> ImageBlock:
    """Return an image block; AttachError if the image is too large to send."""
    from aimon_core.llm import ImageBlock

    if len(data) > MAX_IMAGE_BYTES:
        raise AttachError(f"{name} is {len(data) // 1024:,} KB; images up to "
                          f"{MAX_IMAGE_BYTES // 1000:,} KB can be sent")
    return ImageBlock(media_type=media_type, data=base64.b64encode(data).decode("ascii"))


def _clipboard_readers() -> list[list[str]]:
    """Return the commands that print the clipboard's PNG image, for this desktop."""
    readers = []
    if os.environ.get("WAYLAND_DISPLAY") and shutil.which("wl-paste"):
        readers.append(["wl-paste", "--no-newline", "--type", "image/png"])
    if os.environ.get("DISPLAY") and shutil.which("xclip"):
        readers.append(["xclip", "-selection", "clipboard", "-target", "image/png", "-out"])
    if shutil.which("pngpaste"):  # macOS
        readers.append(["pngpaste", "-"])
    return readers


def clipboard_image() -> ImageBlock:
    """Return the image in the clipboard (blocking); AttachError saying why there is none."""
    readers = _clipboard_readers()
    if not readers:
        raise AttachError("no clipboard to read an image from here (aimon reads it with "
                          "wl-paste, xclip or pngpaste); paste or drop the image file's path "
                          "instead")
    for argv in readers:
        try:
            done = subprocess.run(argv, capture_output=True, timeout=_CLIPBOARD_SECONDS,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0 and done.stdout.startswith(b"\x89PNG"):
            return image_block(done.stdout, "image/png", "the clipboard's image")
    raise AttachError("the clipboard holds no image")


def _clipboard_writers() -> list[list[str]]:
    writers = []
    if os.environ.get("WAYLAND_DISPLAY") and shutil.which("wl-copy"):
        writers.append(["wl-copy"])
    if os.environ.get("DISPLAY") and shutil.which("xclip"):
        writers.append(["xclip", "-selection", "clipboard", "-in"])
    if os.environ.get("DISPLAY") and shutil.which("xsel"):
        writers.append(["xsel", "--clipboard", "--input"])
    if shutil.which("pbcopy"):
        writers.append(["pbcopy"])
    return writers


def copy_to_clipboard(text: str, fallback: Path) -> str:
    """Put `text` on the clipboard (blocking); return where it went, in words.

    With no clipboard program (a server, a container), the text goes to `fallback`.
    """
    for argv in _clipboard_writers():
        try:
            done = subprocess.run(argv, input=text.encode(), capture_output=True,
                                  timeout=_CLIPBOARD_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return f"Copied the last answer to the clipboard ({argv[0]})."
    fallback.parent.mkdir(parents=True, exist_ok=True)
    fallback.write_text(text, encoding="utf-8")
    return (f"No clipboard here (aimon copies with wl-copy, xclip, xsel or pbcopy): the last "
            f"answer is in {fallback}")


def refused_attachments(model: str, provider: str, blocks: tuple[ContentBlock, ...]) -> str:
    """Return why `model` cannot take these attachments, or ""."""
    from aimon_core.llm import DocumentBlock, ImageBlock, model_info

    if not blocks:
        return ""
    info = model_info(model, provider)
    kinds = (("images", ImageBlock, info.takes_images),
             ("PDF documents", DocumentBlock, info.takes_pdfs))
    refused = [name for name, kind, taken in kinds
               if not taken and any(isinstance(b, kind) for b in blocks)]
    if not refused:
        return ""
    return (f"Not sent: {model} does not take {' or '.join(refused)}. Remove the [Image …] or "
            "[PDF …] from the prompt, or switch to a model that does (/model).")
