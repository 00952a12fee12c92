"""Bytes in, text out: size limits, encodings and the ``.zip`` / folder containers of ``.txt`` files.

:func:`decode_bytes` turns file content into text: UTF-8 (with or without BOM), UTF-16/32 with
a BOM (or BOM-less UTF-16 recognised by its NUL pattern), else Windows-1252, else Latin-1
(which maps every byte, so nothing is lost; a fallback is noted). A file whose lines mix UTF-8
and a legacy encoding is decoded line by line (each line that is valid UTF-8 as UTF-8, the
others as Windows-1252 / Latin-1; the note names how many lines and the first one), so its
UTF-8 lines do not turn into mojibake. Newlines are normalised to ``\\n``. Binary content
(NUL bytes, control characters), PDFs and zips under another name raise
:class:`~mia_core.errors.DataError`. ``_read_bytes`` reads a path or an uploaded file-like
object under a hard cap of ``max_bytes`` (at most ``max_bytes + 1`` bytes are read, whatever
``st_size`` says: pipes and ``<(...)`` report 0; devices such as ``/dev/zero`` are refused);
``_zip_txt_members`` and ``_folder_txt_contents`` read the ``.txt`` files of a zip (with a
zip-bomb guard) or a folder under the same limit; a folder's symbolic links that point out of it
(``book.txt -> /etc/passwd``) are never followed: the folder is refused in one line, naming them.

A path the system cannot look up (a name longer than it allows, a folder on the way that cannot be
searched, a NUL character) is a one-line ``DataError`` naming it, shortened (:func:`path_problem`,
:func:`shown_path`), never a raw ``OSError``.

:func:`check_text_length` refuses one text (or document) longer than :func:`max_text_chars`
characters (``MAX_TEXT_CHARS``, 10 million, or the environment variable ``MIA_MAX_TEXT_CHARS``)
when it is read, before any model is loaded: a fast tokenizer needs about 150 bytes of memory
per character of the text it is handed (a 50 MB text: about 7.5 GB) and aborts the process
(a Rust panic, exit 134) when it cannot get them.
"""
from __future__ import annotations

import codecs
import errno
import io
import os
import re
import stat
import zipfile
from pathlib import Path

from ..errors import DataError, SettingsError, safe_text

MAX_BYTES = 200 * 2**20
MAX_TEXT_CHARS = 10_000_000  # one text or document; a fast tokenizer takes ~150 bytes per character
TEXT_CHARS_ENV = "MIA_MAX_TEXT_CHARS"
TOKENIZER_BYTES_PER_CHAR = 150  # measured: SmolLM2's tokenizer, 10M characters of English prose
SUPPORTED_TEXT_SETS = (".txt, .csv, .tsv, .jsonl, .json, .parquet, .arrow, .feather, a Hugging Face datasets folder "
                       "(save_to_disk) or .zip (of .txt files)")
TEXT_SUFFIXES = {".txt", ".text", ".md", ""}
MAX_ZIP_MEMBERS = 100_000
READ_CHUNK = 1 << 20  # bytes per read() of a capped read


# --------------------------------------------------------------------------------------
# bytes in, text out
# --------------------------------------------------------------------------------------
def _human(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def max_text_chars() -> int:
    """The longest text (characters) read: ``MIA_MAX_TEXT_CHARS`` when set, else ``MAX_TEXT_CHARS``."""
    raw = os.environ.get(TEXT_CHARS_ENV, "").strip().replace("_", "").replace(",", "")
    if not raw:
        return MAX_TEXT_CHARS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise SettingsError(f"{TEXT_CHARS_ENV} must be a positive whole number of characters "
                            f"(got {safe_text(os.environ[TEXT_CHARS_ENV])!r}).")
    return value


def check_text_length(text: str, source: str, what: str = "text") -> None:
    """Refuse ``text`` (read from ``source``) when it is longer than :func:`max_text_chars`: one
    ``DataError`` line naming the source, the length, the limit and how to raise it."""
    limit = max_text_chars()
    if len(text) > limit:
        raise DataError(f"{safe_text(source)}: one {what} of {len(text):,} characters, above the {limit:,}-character "
                        f"limit (tokenizing it would take about {_human(len(text) * TOKENIZER_BYTES_PER_CHAR)} "
                        f"of memory); split it into shorter {what}s, or raise the limit with the environment "
                        f"variable {TEXT_CHARS_ENV}.")


SHOWN_PATH_CHARS = 120  # a longer path is cut in the middle in messages


def shown_path(path, limit: int = SHOWN_PATH_CHARS) -> str:
    """``path`` for a one-line message: control characters escaped (:func:`~mia_core.errors.safe_text`), and a
    path longer than ``limit`` characters cut in the middle, its length said."""
    raw = os.fspath(path) if isinstance(path, os.PathLike) else str(path)
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "surrogateescape")
    if len(raw) <= limit:
        return safe_text(raw)
    head = max(1, limit * 2 // 3)
    return f"{safe_text(raw[:head])}...{safe_text(raw[-(limit - head):])} ({len(raw):,} characters)"


def path_problem(path) -> str | None:
    """Why the system cannot look ``path`` up, in words (``"File name too long"``, ``"Permission denied"``, a
    NUL character), or None: a path that exists, or one that does not (the readers say "file not found").
    Only ``stat`` is called; nothing is opened."""
    try:
        os.stat(os.path.expanduser(os.fspath(path)))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        return e.strerror or str(e)
    except (ValueError, TypeError):  # a NUL character; not a path at all
        return "not a usable path (it holds a NUL character)" if "\x00" in str(path) else "not a path"
    return None


def check_path(path, what: str = "") -> None:
    """``DataError`` (one line naming ``path``, shortened) when the system cannot look it up
    (:func:`path_problem`); nothing for a path that exists or does not."""
    why = path_problem(path)
    if why:
        raise DataError(f"cannot read {what + ' ' if what else ''}{shown_path(path)}: {why}.")


def _is_filelike(obj) -> bool:
    return hasattr(obj, "getvalue") or (hasattr(obj, "read") and not isinstance(obj, (str, Path)))


def _display_name(path) -> str:
    if _is_filelike(path):
        return Path(str(getattr(path, "name", "upload"))).name or "upload"
    return Path(path).name


def _too_big(name: str, size: int | None, max_bytes: int) -> DataError:
    what = f"is {_human(size)}" if size is not None else "is larger than that"
    return DataError(f"{name} {what}, above the {_human(max_bytes)} limit; split it or raise max_bytes.")


def _read_capped(fh, name: str, max_bytes: int) -> bytes:
    """At most ``max_bytes`` bytes from an open binary stream, whatever its size claims.

    Reads in chunks and stops at ``max_bytes + 1`` bytes, so ``/dev/zero``-like streams, pipes
    and process substitutions (whose ``st_size`` is 0) cannot grow without bound.
    """
    chunks, total = [], 0
    try:
        while total <= max_bytes:
            chunk = fh.read(min(READ_CHUNK, max_bytes + 1 - total))
            if not chunk:
                break
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8")
            chunks.append(chunk)
            total += len(chunk)
    except MemoryError:
        raise DataError(f"not enough memory to read {name} ({_human(total)} read so far); "
                        "give a smaller file.") from None
    if total > max_bytes:
        raise DataError(f"{name} is larger than the {_human(max_bytes)} limit; split it or raise max_bytes.")
    return b"".join(chunks)


def _file_kind(mode: int) -> str | None:
    """What a non-regular, non-FIFO file is ('a character device'...), or None when readable."""
    from ..paths import file_kind

    kind = file_kind(mode)
    return None if kind in ("a regular file", "a FIFO (pipe)") else kind


def _read_bytes(path, max_bytes: int) -> tuple[str, bytes]:
    """(display name, content) of a path or an uploaded file-like object, read under a hard cap.

    Regular files and FIFOs (pipes, ``<(...)``) are read; at most ``max_bytes + 1`` bytes are
    ever read, whatever ``st_size`` says. Character and block devices (``/dev/zero``), sockets
    and other special files are refused.
    """
    if _is_filelike(path):
        name = _display_name(path)
        size = getattr(path, "size", None)
        if isinstance(size, int) and size > max_bytes:
            raise _too_big(name, size, max_bytes)
        if hasattr(path, "getvalue"):  # in memory already (Streamlit uploads, BytesIO)
            data = path.getvalue()
            if isinstance(data, str):
                data = data.encode("utf-8")
            if len(data) > max_bytes:
                raise _too_big(name, len(data), max_bytes)
            return name, bytes(data)
        return name, _read_capped(path, name, max_bytes)
    p = Path(path).expanduser()
    try:
        st = p.stat()
    except FileNotFoundError:
        raise DataError(f"file not found: {shown_path(p)}") from None
    except OSError as e:
        raise DataError(f"cannot read {shown_path(p)}: {e.strerror or e}.") from None
    except ValueError:  # a NUL character
        raise DataError(f"cannot read {shown_path(p)}: not a usable path (it holds a NUL character).") from None
    if stat.S_ISDIR(st.st_mode):
        raise DataError(f"{shown_path(p)} is a folder, not a file.")
    kind = _file_kind(st.st_mode)
    if kind is not None:
        raise DataError(f"{shown_path(p)} is {kind}, not a file: give a {SUPPORTED_TEXT_SETS} file.")
    if stat.S_ISREG(st.st_mode) and st.st_size > max_bytes:
        raise _too_big(p.name, st.st_size, max_bytes)
    name = p.name if stat.S_ISREG(st.st_mode) else str(p)  # a pipe: /dev/fd/63 rather than 63
    try:
        with open(p, "rb") as fh:
            return name, _read_capped(fh, name, max_bytes)
    except OSError as e:
        raise DataError(f"cannot read {shown_path(p)}: {e.strerror or e}.") from None


def _utf16_without_bom(data: bytes) -> str | None:
    """'utf-16-le'/'utf-16-be' when the NUL bytes follow the pattern of mostly-ASCII UTF-16."""
    if len(data) < 4 or len(data) % 2:
        return None
    even_nul = data[0::2].count(0) / (len(data) / 2)
    odd_nul = data[1::2].count(0) / (len(data) / 2)
    if odd_nul > 0.6 and even_nul < 0.05:
        return "utf-16-le"
    if even_nul > 0.6 and odd_nul < 0.05:
        return "utf-16-be"
    return None


def _control_fraction(data: bytes) -> float:
    sample = data[:65536]
    bad = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    return bad / max(1, len(sample))


_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_LEGACY_LABELS = {"cp1252": "Windows-1252 (cp1252)", "latin-1": "Latin-1 (ISO-8859-1)"}


def _legacy(raw: bytes) -> tuple[str, str]:
    """``raw`` as Windows-1252, else Latin-1 (which maps every byte): (text, encoding)."""
    try:
        return raw.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return raw.decode("latin-1"), "latin-1"


def _decode_legacy(data: bytes, name: str, notes: list[str] | None, *, bom: bool = False) -> tuple[str, str]:
    """Content that is not valid UTF-8 as a whole (and not binary): (text, encoding).

    When no line with non-ASCII bytes is valid UTF-8 (and the file had no UTF-8 byte-order
    mark, ``bom``), the whole file is Windows-1252 (else Latin-1), noted. When some lines are
    valid UTF-8 and others are not (a file assembled from several sources), each line is
    decoded on its own: UTF-8 where it is valid, Windows-1252 / Latin-1 where it is not; the
    note names how many lines took the fallback and the first one. The encoding returned is
    then ``"utf-8+cp1252"`` (or ``"utf-8+latin-1"``).
    """
    lines = _LINE_BREAK.split(data)
    utf8_lines = 0  # lines with non-ASCII bytes that are valid UTF-8
    legacy: list[int] = []  # indices of the lines that are not
    decoded: list[str | None] = []
    for i, raw in enumerate(lines):
        if raw.isascii():
            decoded.append(raw.decode("ascii"))
            continue
        try:
            decoded.append(raw.decode("utf-8"))
            utf8_lines += 1
        except UnicodeDecodeError:
            decoded.append(None)
            legacy.append(i)
    if not utf8_lines and not bom:  # one legacy encoding for the whole file
        text, enc = _legacy(data)
        if notes is not None:
            notes.append(f"{name}: not valid UTF-8; read as {_LEGACY_LABELS[enc]}, keeping every byte. "
                         "Save it as UTF-8 to be sure of the characters.")
        return text, enc
    used = set()
    for i in legacy:
        decoded[i], e = _legacy(lines[i])
        used.add(e)
    fallback = "latin-1" if "latin-1" in used else "cp1252"
    label = "Windows-1252 (cp1252)" if used == {"cp1252"} else "Windows-1252 / Latin-1"
    if notes is not None:
        n = len(legacy)
        notes.append(f"{name}: mixes encodings: {n} line{'s' if n != 1 else ''} not valid UTF-8 (first: line "
                     f"{legacy[0] + 1}) read as {label}, the other lines as UTF-8. Save it as UTF-8 to be sure "
                     "of the characters.")
    return "\n".join(decoded), f"utf-8+{fallback}"


def decode_bytes(data: bytes, name: str, notes: list[str] | None = None) -> tuple[str, str]:
    """Decode file content to text with newlines normalised; returns (text, encoding used).

    Order: BOM (UTF-8, UTF-32, UTF-16), BOM-less UTF-16 (NUL pattern), UTF-8, then
    Windows-1252 and finally Latin-1 (noted in ``notes``); a file mixing UTF-8 lines and lines
    that are not is decoded line by line (:func:`_decode_legacy`). Binary content raises
    ``DataError``.
    """
    if len(data) == 0:
        raise DataError(f"{name} is empty.")
    if data.startswith(b"%PDF"):
        raise DataError(f"{name} is a PDF file, not plain text: convert it to .txt first.")
    if data.startswith(b"PK\x03\x04") and not name.lower().endswith(".zip"):
        raise DataError(f"{name} is a zip archive, not plain text: give it a .zip name to read the .txt files inside.")
    enc = None
    if data.startswith(codecs.BOM_UTF8):
        enc = "utf-8-sig"
    elif data.startswith(codecs.BOM_UTF32_LE) or data.startswith(codecs.BOM_UTF32_BE):
        enc = "utf-32"
    elif data.startswith(codecs.BOM_UTF16_LE) or data.startswith(codecs.BOM_UTF16_BE):
        enc = "utf-16"
    elif b"\x00" in data:
        enc = _utf16_without_bom(data)
        if enc is None:
            nul = b"\x00"
            lines = [i + 1 for i, line in enumerate(data.split(b"\n")) if nul in line]
            n = data.count(nul)
            if n <= max(1, len(data) // 1000) and _control_fraction(data.replace(nul, b"")) <= 0.01:
                # text with a stray NUL byte or two (a bad copy, a broken editor): say where, not "binary"
                where = ", ".join(map(str, lines[:5])) + (" ..." if len(lines) > 5 else "")
                raise DataError(f"{name} is text but holds {n} NUL byte{'s' if n != 1 else ''} (on "
                                f"line{'s' if len(lines) != 1 else ''} {where}), which no text has: remove "
                                f"{'it' if n == 1 else 'them'} (or that line) and give the file again.")
            raise DataError(f"{name} looks like a binary file (it contains NUL bytes), not text: "
                            f"give a {SUPPORTED_TEXT_SETS} file.")
    if enc is not None:
        try:
            text = data.decode(enc)
        except UnicodeDecodeError:
            if enc == "utf-8-sig" and _control_fraction(data) <= 0.01:  # UTF-8 lines and others
                text, enc = _decode_legacy(data[len(codecs.BOM_UTF8):], name, notes, bom=True)
                return text.replace("\r\n", "\n").replace("\r", "\n"), enc
            raise DataError(f"{name} starts like {enc.upper()} text but cannot be decoded as such; "
                            "save it as UTF-8.") from None
        if enc.startswith("utf-16-") and notes is not None:
            notes.append(f"{name}: no byte-order mark; read as {enc.upper()}.")
    else:
        try:
            text = data.decode("utf-8")
            enc = "utf-8"
        except UnicodeDecodeError:
            if _control_fraction(data) > 0.01:
                raise DataError(f"{name} looks like a binary file, not text: give a {SUPPORTED_TEXT_SETS} file.") from None
            text, enc = _decode_legacy(data, name, notes)
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return text, enc


# --------------------------------------------------------------------------------------
# zip and folders of .txt files
# --------------------------------------------------------------------------------------
def _zip_txt_members(data: bytes, name: str, max_bytes: int) -> list[tuple[str, bytes]]:
    """(member name, bytes) of every .txt file in a zip, with a zip-bomb guard.

    The guard refuses archives whose declared *or actual* uncompressed .txt total exceeds
    ``max_bytes`` (reading is streamed and stops at the limit, so lying headers do not help).
    """
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise DataError(f"{name} is not a valid zip archive.") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > MAX_ZIP_MEMBERS:
            raise DataError(f"{name} holds {len(infos):,} files, more than the {MAX_ZIP_MEMBERS:,} allowed.")
        txt = [i for i in infos if i.filename.lower().endswith(".txt")
               and not Path(i.filename).name.startswith("._") and "__MACOSX/" not in i.filename]
        if not txt:
            shown = ", ".join(i.filename for i in infos[:5]) or "nothing"
            raise DataError(f"{name} holds no .txt file (it contains {shown}{' ...' if len(infos) > 5 else ''}).")
        declared = sum(i.file_size for i in txt)
        if declared > max_bytes:
            raise DataError(f"{name} unpacks to {_human(declared)} of text, above the {_human(max_bytes)} limit.")
        out, total = [], 0
        for info in sorted(txt, key=lambda i: i.filename):
            try:
                with zf.open(info) as fh:
                    chunk = fh.read(max_bytes - total + 1)
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError) as e:
                raise DataError(f"cannot read {info.filename} in {name}: {e}.") from None
            total += len(chunk)
            if total > max_bytes:
                raise DataError(f"{name} unpacks to more than the {_human(max_bytes)} limit.")
            out.append((info.filename, chunk))
        return out


def _folder_txt_files(p: Path, max_bytes: int) -> list[Path]:
    """The regular ``.txt`` files under ``p`` (recursively, hidden ones skipped), size-checked.

    A symbolic link to a file inside ``p`` is read; one that points out of ``p`` (a system file, another
    user's folder) is never followed: ``DataError``, one line naming the links."""
    check_path(p, "the folder")
    try:
        root = Path(os.path.realpath(p))
        files, outside = [], []
        for f in sorted(p.rglob("*")):
            if f.suffix.lower() != ".txt" or f.name.startswith(".") or not f.is_file():
                continue
            real = Path(os.path.realpath(f))
            if real == root or root not in real.parents:
                outside.append((f, real))
            else:
                files.append(f)
        if not files and not outside:
            raise DataError(f"the folder {shown_path(p)} holds no .txt file.")
        if outside:
            (f, real), n = outside[0], len(outside)
            raise DataError(f"the folder {shown_path(p)} holds {n} symbolic link{'s' if n != 1 else ''} to "
                            f"{'files' if n != 1 else 'a file'} outside it (e.g. {shown_path(f.relative_to(p))} -> "
                            f"{shown_path(real)}): links out of the folder are not followed; copy "
                            f"{'those files' if n != 1 else 'that file'} into the folder, or give "
                            f"{'them' if n != 1 else 'it'} by name.")
        total = sum(f.stat().st_size for f in files)
    except OSError as e:
        raise DataError(f"cannot read the folder {shown_path(p)}: {e.strerror or e}.") from None
    if total > max_bytes:
        raise DataError(f"the .txt files in {shown_path(p)} total {_human(total)}, above the {_human(max_bytes)} "
                        "limit.")
    return files


def _folder_txt_contents(p: Path, max_bytes: int) -> list[tuple[Path, bytes]]:
    """(path, bytes) of the ``.txt`` files under ``p``; the total actually read is capped at ``max_bytes``."""
    out, total = [], 0
    for f in _folder_txt_files(p, max_bytes):
        _, data = _read_bytes(f, max_bytes)
        total += len(data)
        if total > max_bytes:  # the files grew after they were listed
            raise DataError(f"the .txt files in {shown_path(p)} total more than the {_human(max_bytes)} limit.")
        out.append((f, data))
    return out


def _suffix(path) -> str:
    name = _display_name(path)
    return Path(name).suffix.lower()
