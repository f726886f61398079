"""JSON text in pieces: exactly the text ``json.dumps`` gives, with long arrays encoded a chunk at a time.

An export of 10^6 cells holds several arrays of 10^6 values (counts, labels, intervals, ...). ``json.dumps`` of
such a document builds a Python object per value, and with ``indent`` a list of several small strings per value
before it joins them: over a gigabyte for one export. ``iter_json`` yields the same text in pieces of
``CHUNK`` values, reading a NumPy array or a lazy sequence (``NumberedNames``) a slice at a time, so a writer can
send it to a file, or a signer gather it into one buffer, without either.

The text is the same as ``json.dumps(value, indent=..., separators=..., sort_keys=..., ensure_ascii=True,
allow_nan=False)`` with the arrays given as lists: the same separators and indentation, key order, ``\\uXXXX``
escapes and float digits (``float.__repr__``, what ``json`` writes). A value with no long array in it is handed to
``json.dumps`` itself. What ``json.dumps`` cannot encode is refused the same way (``ValueError`` for NaN and
infinities, ``TypeError`` for other objects).

>>> import json
>>> import numpy as np
>>> doc = {"b": np.array([1.5, -2.0]), "a": NumberedNames(3, "row "), "c": {"é": None}}
>>> "".join(iter_json(doc, indent=1)) == json.dumps(
...     {"b": [1.5, -2.0], "a": ["row 0", "row 1", "row 2"], "c": {"é": None}}, indent=1)
True
>>> "".join(iter_json(doc, separators=(",", ":"), sort_keys=True))
'{"a":["row 0","row 1","row 2"],"b":[1.5,-2.0],"c":{"\\\\u00e9":null}}'
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import overload

import numpy as np

CHUNK = 65_536  # values per piece: about a megabyte of text, a few MB of transient Python objects


@dataclass(frozen=True)
class NumberedNames(Sequence[str]):
    """The ``length`` names ``f"{prefix}{i}{suffix}"`` for i = 0, 1, ...; each made when it is read (a slice gives a
    list). The default labels of 10^6 unlabelled bins, or the row names of 10^6 queries, without 10^6 strings.

    >>> names = NumberedNames(4, "row ", " of prefix")
    >>> names[1], names[-1], names[1:3], len(names)
    ('row 1 of prefix', 'row 3 of prefix', ['row 1 of prefix', 'row 2 of prefix'], 4)
    """

    length: int
    prefix: str = ""
    suffix: str = ""

    def __post_init__(self) -> None:
        if operator.index(self.length) < 0:
            raise ValueError(f"NumberedNames needs length >= 0, got {self.length}")

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [f"{self.prefix}{i}{self.suffix}" for i in range(*index.indices(self.length))]
        position = operator.index(index)
        position += self.length if position < 0 else 0
        if not 0 <= position < self.length:
            raise IndexError(f"name {index} of {self.length}")
        return f"{self.prefix}{position}{self.suffix}"

    def __iter__(self) -> Iterator[str]:
        for start in range(0, self.length, CHUNK):
            yield from self[start:start + CHUNK]


def iter_json(value: object, *, indent: int | None = None, separators: tuple[str, str] | None = None,
              sort_keys: bool = False) -> Iterator[str]:
    """The JSON text of ``value`` in pieces: ``"".join`` of them is ``json.dumps(value, indent=indent,
    separators=separators, sort_keys=sort_keys, ensure_ascii=True, allow_nan=False)`` with every NumPy array and
    lazy sequence read as the list of its values (module docstring).

    Raises:
        ValueError: a NaN or infinite float, as ``json.dumps`` with ``allow_nan=False``.
        TypeError: a value ``json.dumps`` cannot encode, or a dict with a long array and a key that is not a string.
    """
    if indent is not None and (isinstance(indent, bool) or operator.index(indent) < 0):
        raise ValueError(f"indent must be None or an int >= 0, got {indent!r}")
    if separators is None:
        separators = (",", ": ") if indent is not None else (", ", ": ")
    yield from _Encoder(indent, separators, sort_keys).encode(value, 0)


def _streams(value: object) -> bool:
    """Whether ``value`` is or holds an array read in chunks (NumPy, a lazy sequence, or a list longer than CHUNK)."""
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, str | bytes | bytearray):
        return False
    if isinstance(value, list | tuple):
        return len(value) > CHUNK or any(_streams(v) for v in value)
    if isinstance(value, dict):
        return any(_streams(v) for v in value.values())
    return isinstance(value, Sequence)


def _floats_finite(values: np.ndarray) -> np.ndarray:
    if not np.isfinite(values).all():
        raise ValueError("Out of range float values are not JSON compliant")
    return values


@dataclass(frozen=True)
class _Encoder:
    indent: int | None
    separators: tuple[str, str]
    sort_keys: bool

    def newline(self, level: int) -> str:
        return "" if self.indent is None else "\n" + " " * (self.indent * level)

    def dumps(self, value: object, level: int) -> str:
        """``json.dumps`` of a value with no long array, indented as if it stood at ``level``."""
        text = json.dumps(value, indent=self.indent, separators=self.separators, sort_keys=self.sort_keys,
                          ensure_ascii=True, allow_nan=False)
        # JSON escapes every newline inside a string, so each "\n" in the text starts an indented line
        return text if self.indent is None or level == 0 else text.replace("\n", self.newline(level))

    def encode(self, value: object, level: int) -> Iterator[str]:
        if not _streams(value):
            yield self.dumps(value, level)
        elif isinstance(value, dict):
            yield from self.encode_object(value, level)
        elif isinstance(value, np.ndarray) and value.ndim != 1:
            yield from self.encode(value.tolist(), level)
        elif isinstance(value, list | tuple) and any(_streams(v) for v in value):
            yield from self.encode_nested(value, level)
        else:
            yield from self.encode_array(value, level)  # type: ignore[arg-type]  # _streams: a sequence

    def encode_object(self, value: dict, level: int) -> Iterator[str]:
        if any(not isinstance(key, str) for key in value):
            raise TypeError("a JSON object holding a long array must have string keys")
        items = sorted(value.items(), key=operator.itemgetter(0)) if self.sort_keys else value.items()
        item_separator, key_separator = self.separators
        yield "{"
        for i, (key, member) in enumerate(items):
            yield (item_separator if i else "") + self.newline(level + 1) + encode_basestring_ascii(key) + key_separator
            yield from self.encode(member, level + 1)
        yield self.newline(level) + "}"

    def encode_nested(self, value: Sequence, level: int) -> Iterator[str]:
        yield "["
        for i, member in enumerate(value):
            yield (self.separators[0] if i else "") + self.newline(level + 1)
            yield from self.encode(member, level + 1)
        yield self.newline(level) + "]"

    def encode_array(self, value: Sequence | np.ndarray, level: int) -> Iterator[str]:
        if len(value) == 0:
            yield "[]"
            return
        between = self.separators[0] + self.newline(level + 1)
        yield "["
        for start in range(0, len(value), CHUNK):
            chunk = value[start:start + CHUNK]
            if isinstance(chunk, np.ndarray) and chunk.dtype.kind == "f":  # the float each value is, as json writes it
                texts = list(map(float.__repr__, _floats_finite(chunk).tolist()))
            else:
                texts = self.scalars(chunk.tolist() if isinstance(chunk, np.ndarray) else chunk, level + 1)
            yield (between if start else self.newline(level + 1)) + between.join(texts)
        yield self.newline(level) + "]"

    def scalars(self, chunk: Sequence, level: int) -> list[str]:
        """Each value of ``chunk`` as JSON: floats, strings and ints directly (as ``json`` writes them), others via
        ``dumps``."""
        kinds = set(map(type, chunk))
        if kinds <= {float}:
            if not all(map(math.isfinite, chunk)):
                raise ValueError("Out of range float values are not JSON compliant")
            return list(map(float.__repr__, chunk))
        if kinds <= {str}:
            return list(map(encode_basestring_ascii, chunk))
        if kinds <= {int}:
            return list(map(int.__repr__, chunk))
        return ["".join(self.encode(member, level)) for member in chunk]


__all__ = ["CHUNK", "NumberedNames", "iter_json"]
