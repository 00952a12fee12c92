"""Reading and validating the texts to audit.

**Text sets** (:func:`load_dataset`, :func:`read_texts`, :func:`texts_from_strings`): members
(texts believed to be in the training data, label 1) and non-members (label 0), either as
two files or one labelled file; and one-role sets such as the **population** of known
non-members that sets a threshold (:func:`read_population`). Formats:

- ``.txt``: one text per line (``mode="lines"``) or blank-line-separated paragraphs
  (``mode="blank"``); ``mode="auto"`` picks paragraphs when the file is made of
  multi-line paragraphs separated by blank lines.
- ``.csv`` / ``.tsv`` / ``.jsonl`` / ``.json`` (a list of objects): a text column
  (``text``, ``input``, ``content``, ``sentence`` or ``document``, else the only string
  column; ``text_column`` overrides), an optional label column (1/0, true/false,
  member/nonmember), an optional group column and an optional ``id`` column.
- ``.zip`` of ``.txt`` files, or a folder of ``.txt`` files: one text per file.
- ``.parquet`` / ``.arrow`` / ``.feather`` and folders written by ``datasets``' ``save_to_disk``
  (read with pyarrow), and ``hf:ID[:config][@split]``, a hub dataset's parquet conversion (the
  local Hugging Face cache only when offline): tables, as above.

Whole documents (books, articles; Project Gutenberg headers stripped) are read by
:func:`mia_core.documents.load_documents` (``mia_core/documents/books.py``), on the same
decoding and size checks.

Validation raises :class:`~mia_core.errors.DataError` with one clear sentence (never a
traceback): missing, empty, binary or oversized files, zips without ``.txt`` files or that
unpack to too much data, unknown label values, tables without a text column, empty member or
non-member sets, a text longer than ``max_text_chars()`` characters (10 million, or the
environment variable ``MIA_MAX_TEXT_CHARS``: a fast tokenizer aborts the process on a text it
has no memory for), and texts present in both sets (compared in Unicode NFC with whitespace
collapsed, so the same text in NFC and NFD is caught). Encodings: UTF-8 (with or without BOM),
UTF-16/32 with a BOM (or BOM-less UTF-16 recognised by its NUL pattern), else Windows-1252,
else Latin-1 (which maps every byte, so nothing is lost); a fallback is noted in the report,
and a file mixing UTF-8 lines with lines that are not is decoded line by line.
Newlines are normalised to ``\\n`` and each text is trimmed at both ends; nothing else is
changed (no Unicode normalisation: texts are scored as given). Only text formats are read:
nothing is ever unpickled.

Source locations (used in messages): ``members.txt:12`` (line 12; for paragraphs, the line
the paragraph starts on), ``data.jsonl:12`` (line), ``data.csv:row 3`` (spreadsheet row,
the header being row 1), ``data.json:item 3`` and ``books.zip:dir/a.txt``.

Which module holds what:

- ``decoding``: bytes in, text out: size limits (``MAX_BYTES``, ``MAX_TEXT_CHARS``), :func:`decode_bytes`
  (encodings, BOM-less UTF-16, binary checks), reading paths and uploads, the ``.txt`` files
  of a ``.zip`` (zip-bomb guard) or a folder.
- ``records``: :class:`Record` (one text as read, with its source) and plain text split into
  lines or paragraphs.
- ``tables``: ``.csv`` / ``.tsv`` / ``.jsonl`` / ``.json`` (and the Arrow family) to records: text,
  label, group and id columns.
- ``hub``: ``hf:ID[:config][@split]``: the spec parsed, the parquet files fetched from (or, offline,
  found in) the Hugging Face cache, read as one table.
- ``sets``: :class:`Dataset`, :func:`read_texts` (one input), :func:`load_dataset` and
  :func:`texts_from_strings` (members and non-members with the set-level checks), and
  :func:`read_population` (the one reader of population sets and other one-role sets).
- ``splits``: :func:`split_mask`, the stratified member/non-member split (the pipeline's
  train/evaluation split, SMIA's validation split).
"""
from .decoding import (MAX_BYTES, MAX_TEXT_CHARS, MAX_ZIP_MEMBERS, SUPPORTED_TEXT_SETS, TEXT_SUFFIXES,
                       check_text_length, decode_bytes, max_text_chars)
from .hub import HubSpec, is_hub_spec, parse_hub_spec
from .records import Record
from .sets import Dataset, load_dataset, overlap_key, read_population, read_texts, texts_from_strings
from .splits import split_corpus, split_mask
from .tables import TEXT_COLUMN_NAMES

__all__ = [
    "MAX_BYTES", "MAX_TEXT_CHARS", "MAX_ZIP_MEMBERS", "SUPPORTED_TEXT_SETS", "TEXT_COLUMN_NAMES", "TEXT_SUFFIXES",
    "Dataset", "HubSpec", "Record", "check_text_length", "decode_bytes", "is_hub_spec", "load_dataset",
    "max_text_chars", "overlap_key", "parse_hub_spec", "read_population", "read_texts", "split_corpus", "split_mask",
    "texts_from_strings",
]
