"""Reference codec for NBP/1, the NotificationBus wire protocol.

Standard library only.  The normative text is ``protocol/NBP-1.md``; this
module follows it literally and is checked against ``protocol/vectors/``.

A message is exactly one ZeroMQ frame, one notification (version 1)::

    name (1..255 bytes UTF-8) | 0x00 | fixed header (32 bytes) | header map | payload

or a batch of notifications of that one name from one publisher (version 2)::

    name | 0x00 | batch header (16 bytes) | record | record | ...
    record = fixed part (26 bytes) | header map | payload

Public API
----------
``encode(...)``           build a frame (validates everything, raises ValueError)
``decode_all(frames, ...)`` parse one received ZeroMQ message (list of frames):
                          a list of ``Notification`` (one, or a batch's), or
                          raises ``Rejected``.  What a receiver calls.
``decode(frames, ...)``   the same for a version 1 frame only (a batch is
                          ``unsupportedVersion`` to it, as to receivers
                          written before batches)
``encode_batch(...)``     build a batch frame from encoded version 1 frames
                          (refuses control names and frames over MAX_BATCH_FRAME)
``declared_record_count(frame)`` / ``unmatched_notification_count(frame)``
                          what a batch counts as when rejected / skipped by name
``batch_frame_limit(max_payload)`` the largest batch frame a receiver accepts
``validate_name(name)``   check a concrete notification name (ValueError)
``Pattern.compile(p)``    subscription pattern -> ``.prefix`` (bytes for
                          ZMQ_SUBSCRIBE) and ``.matches(name)``
``PublisherState``        publisher id + per-name sequence numbers
``SequenceTracker``       receiver-side gap detection (informative helper)
"""

from __future__ import annotations

import secrets
import struct
import time
from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Sequence, Tuple, Union

__all__ = [
    "VERSION", "PROTOCOL", "FIXED_HEADER_SIZE", "MAX_NAME_BYTES", "MAX_HEADER_COUNT",
    "MAX_HEADERS_LENGTH", "MAX_KEY_BYTES", "MAX_VALUE_BYTES", "DEFAULT_MAX_PAYLOAD",
    "CONTENT_TYPES", "REASONS",
    "BATCH_VERSION", "BATCH_HEADER_SIZE", "BATCH_RECORD_HEADER_SIZE", "MAX_BATCH_RECORDS",
    "Notification", "Rejected", "encode", "decode", "decode_all", "encode_batch",
    "declared_record_count", "unmatched_notification_count", "batch_frame_limit", "MAX_BATCH_FRAME",
    "CONTROL_TOKEN", "validate_name", "Pattern",
    "PublisherState", "SequenceTracker",
    "FLAG_RETAIN", "FLAG_RETAINED_COPY", "is_retained", "asks_to_retain",
    "RETAINED_REPLY_PREFIX", "retained_request_topic", "retained_reply_name", "retained_snapshot_entries",
]

PROTOCOL = "NBP/1"
VERSION = 1
FIXED_HEADER_SIZE = 32
MAX_NAME_BYTES = 255
MAX_HEADER_COUNT = 32
MAX_HEADERS_LENGTH = 4096
MAX_KEY_BYTES = 64
MAX_VALUE_BYTES = 1024
DEFAULT_MAX_PAYLOAD = 1048576
BATCH_VERSION = 2
BATCH_HEADER_SIZE = 16
BATCH_RECORD_HEADER_SIZE = 26
MAX_BATCH_RECORDS = 1024
#: The first token of control names (section 15); a batch never carries one.
CONTROL_TOKEN = "_nbus"
#: The largest batch frame a producer sends (section 2.3): 4384 + 1048576 bytes,
#: the largest version 1 frame at the default maxPayload.  Every receiver
#: accepts a batch frame this large, whatever its own maxPayload.
MAX_BATCH_FRAME = 255 + 1 + 32 + 4096 + DEFAULT_MAX_PAYLOAD
U64_MAX = (1 << 64) - 1

#: Registered content-type codes (6..127 reserved, 128..255 application-defined).
CONTENT_TYPES: Dict[int, str] = {
    0: "unspecified",
    1: "text/plain;charset=utf-8",
    2: "application/json",
    3: "application/cbor",
    4: "application/msgpack",
    5: "application/x-protobuf",
}

# Receiver reject reasons, in the order the checks run (some appear twice in
# the check order; the tuple lists each name once).
WRONG_FRAME_COUNT = "wrongFrameCount"
MISSING_NAME_TERMINATOR = "missingNameTerminator"
INVALID_UTF8 = "invalidUTF8"
INVALID_NAME = "invalidName"
TRUNCATED_HEADER = "truncatedHeader"
UNSUPPORTED_VERSION = "unsupportedVersion"
NAME_LENGTH_MISMATCH = "nameLengthMismatch"
HEADER_LIMIT_EXCEEDED = "headerLimitExceeded"
HEADER_MAP_INVALID = "headerMapInvalid"
PAYLOAD_TOO_LARGE = "payloadTooLarge"
BATCH_INVALID = "batchInvalid"

REASONS = (
    WRONG_FRAME_COUNT, MISSING_NAME_TERMINATOR, INVALID_UTF8, INVALID_NAME,
    TRUNCATED_HEADER, UNSUPPORTED_VERSION, NAME_LENGTH_MISMATCH,
    HEADER_LIMIT_EXCEEDED, HEADER_MAP_INVALID, PAYLOAD_TOO_LARGE, BATCH_INVALID,
)

# version, flags, contentType, nameLength, headersLength, headerCount,
# reserved, sequence, publisherId, timestamp -- network byte order, no padding.
_FIXED = struct.Struct("!BBBBHBBQQQ")
assert _FIXED.size == FIXED_HEADER_SIZE
# Batch header: version (2), flags, nameLength, reserved, recordCount (u16),
# reserved (u16), publisherId.
_BATCH = struct.Struct("!BBBBHHQ")
assert _BATCH.size == BATCH_HEADER_SIZE
# Batch record: flags, contentType, headerCount, reserved, headersLength (u16),
# payloadLength (u32), sequence, timestamp; then the header map and the payload.
_RECORD = struct.Struct("!BBBBHIQQ")
assert _RECORD.size == BATCH_RECORD_HEADER_SIZE

BytesLike = Union[bytes, bytearray, memoryview]
Text = Union[str, bytes, bytearray, memoryview]


class Rejected(Exception):
    """A received message violates NBP/1.

    ``reason`` is one of ``REASONS``.  A receiver drops the message, counts it
    under ``reason`` and carries on.  ``records`` is, for a rejected batch
    whose header was readable with a count of 1..1024, the number of
    notifications it declared (``None`` otherwise): what a receiver reports
    as the notifications the rejection cost.
    """

    def __init__(self, reason: str, detail: str = "", records: Optional[int] = None):
        self.reason = reason
        self.detail = detail
        self.records = records
        super().__init__(f"{reason}: {detail}" if detail else reason)


@dataclass(frozen=True)
class Notification:
    """A decoded NBP/1 message.

    ``headers`` is a tuple of ``(key, value)`` string pairs in wire order.
    ``flags`` and ``reserved`` are reported as received; receivers must not
    give them meaning in NBP/1.
    """

    name: str
    payload: bytes = b""
    headers: Tuple[Tuple[str, str], ...] = ()
    content_type: int = 0
    sequence: int = 0
    publisher_id: int = 0
    timestamp: int = 0
    version: int = VERSION
    flags: int = 0
    reserved: int = 0

    @property
    def is_retained(self) -> bool:
        """A kept current value handed to a new subscription (section 18), not a change now."""
        return bool(self.flags & FLAG_RETAINED_COPY)

    @property
    def header_dict(self) -> Dict[str, str]:
        """Headers as a dict (keys are unique on the wire)."""
        return dict(self.headers)


# --------------------------------------------------------------------------
# Names

def _utf8(data: bytes) -> Optional[str]:
    """Strict UTF-8 decode (rejects overlongs, surrogates, > U+10FFFF)."""
    try:
        return data.decode("utf-8", "strict")
    except UnicodeDecodeError:
        return None


def _forbidden(b: int) -> bool:
    return b <= 0x20 or b == 0x7F


def _name_problem(raw: bytes, allow_wildcards: bool = False) -> Optional[str]:
    """Return why ``raw`` (already known to be valid UTF-8) is not a valid
    name (or pattern if ``allow_wildcards``), or None if it is fine."""
    if not raw:
        return "empty name"
    if len(raw) > MAX_NAME_BYTES:
        return f"longer than {MAX_NAME_BYTES} bytes ({len(raw)})"
    for b in raw:
        if _forbidden(b):
            return f"forbidden byte 0x{b:02x} (NUL, space, control characters and DEL are not allowed)"
    tokens = raw.split(b".")
    for i, tok in enumerate(tokens):
        if not tok:
            return "empty token (leading, trailing or doubled '.')"
        if tok in (b"*", b">") and allow_wildcards:
            if tok == b">" and i != len(tokens) - 1:
                return "'>' must be the last token"
            continue
        if b"*" in tok or b">" in tok:
            if allow_wildcards:
                return f"'*' and '>' must be whole tokens (token {tok.decode('utf-8')!r})"
            return "'*' and '>' are not allowed in a concrete name"
    return None


def _as_bytes(value: Text, what: str) -> bytes:
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as e:  # lone surrogates in a str
            raise ValueError(f"{what} is not encodable as UTF-8: {e}") from None
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if _utf8(raw) is None:
            raise ValueError(f"{what} is not valid UTF-8")
        return raw
    raise TypeError(f"{what} must be str or bytes, not {type(value).__name__}")


def validate_name(name: Text) -> str:
    """Check a concrete notification name; return it as ``str``.

    Rules: 1..255 bytes of valid UTF-8; '.'-separated tokens, none empty;
    no byte 0x00-0x20 or 0x7F; no '*' or '>' anywhere.  Raises ValueError.
    """
    raw = _as_bytes(name, "name")
    problem = _name_problem(raw)
    if problem:
        raise ValueError(f"invalid notification name {raw!r}: {problem}")
    return raw.decode("utf-8")


# --------------------------------------------------------------------------
# Patterns

class Pattern:
    """A subscription pattern.

    * a concrete name matches exactly that name;
    * ``*`` as a whole token matches exactly one token;
    * ``>`` as the last whole token matches one or more trailing tokens.

    ``prefix`` is what to pass to ZMQ_SUBSCRIBE: for an exact pattern the name
    bytes followed by 0x00; otherwise the literal bytes before the first
    wildcard token (possibly empty).  The receiver must still call
    ``matches`` for wildcard patterns.
    """

    __slots__ = ("text", "tokens", "prefix", "is_exact")

    def __init__(self, text: str, tokens: Tuple[str, ...], prefix: bytes, is_exact: bool):
        self.text = text
        self.tokens = tokens
        self.prefix = prefix
        self.is_exact = is_exact

    @classmethod
    def compile(cls, pattern: Text) -> "Pattern":
        """Validate ``pattern`` and compute its ZeroMQ prefix (ValueError if invalid)."""
        raw = _as_bytes(pattern, "pattern")
        problem = _name_problem(raw, allow_wildcards=True)
        if problem:
            raise ValueError(f"invalid pattern {raw!r}: {problem}")
        text = raw.decode("utf-8")
        tokens = tuple(text.split("."))
        wild = [i for i, t in enumerate(tokens) if t in ("*", ">")]
        if not wild:
            return cls(text, tokens, raw + b"\x00", True)
        literal = tokens[: wild[0]]
        prefix = ("".join(t + "." for t in literal)).encode("utf-8")
        return cls(text, tokens, prefix, False)

    def matches(self, name: Text) -> bool:
        """True if the concrete ``name`` matches this pattern (False for invalid names)."""
        try:
            text = validate_name(name)
        except (ValueError, TypeError):
            return False
        if self.is_exact:
            return text == self.text
        parts = text.split(".")
        pat = self.tokens
        for i, tok in enumerate(pat):
            if tok == ">":
                return len(parts) > i  # one or more remaining tokens
            if i >= len(parts):
                return False
            if tok != "*" and tok != parts[i]:
                return False
        return len(parts) == len(pat)

    def __repr__(self) -> str:
        return f"Pattern({self.text!r}, prefix={self.prefix!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pattern) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


# --------------------------------------------------------------------------
# Encoding

def _check_uint(value: int, bits: int, what: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int")
    top = (1 << bits) - 1
    if not minimum <= value <= top:
        raise ValueError(f"{what} must be in {minimum}..{top}, got {value}")
    return value


def _encode_headers(headers: Iterable[Tuple[Text, Text]]) -> Tuple[bytes, int]:
    pairs = list(headers.items()) if isinstance(headers, dict) else list(headers)
    if len(pairs) > MAX_HEADER_COUNT:
        raise ValueError(f"too many headers: {len(pairs)} > {MAX_HEADER_COUNT}")
    out = bytearray()
    seen = set()
    for pair in pairs:
        key, value = pair
        k = _as_bytes(key, "header key")
        v = _as_bytes(value, "header value")
        if not 1 <= len(k) <= MAX_KEY_BYTES:
            raise ValueError(f"header key {k!r} must be 1..{MAX_KEY_BYTES} bytes, is {len(k)}")
        if b"\x00" in k:
            raise ValueError(f"header key {k!r} contains NUL")
        if len(v) > MAX_VALUE_BYTES:
            raise ValueError(f"header value for {k!r} is {len(v)} bytes > {MAX_VALUE_BYTES}")
        if k in seen:
            raise ValueError(f"duplicate header key {k!r}")
        seen.add(k)
        out += bytes([len(k)]) + k + struct.pack("!H", len(v)) + v
    if len(out) > MAX_HEADERS_LENGTH:
        raise ValueError(f"header map is {len(out)} bytes > {MAX_HEADERS_LENGTH}")
    return bytes(out), len(pairs)


def encode(
    name: Text,
    payload: BytesLike = b"",
    headers: Iterable[Tuple[Text, Text]] = (),
    *,
    sequence: int,
    publisher_id: int,
    timestamp_ns: int,
    content_type: int = 0,
    flags: int = 0,
    max_payload: Optional[int] = DEFAULT_MAX_PAYLOAD,
) -> bytes:
    """Build one NBP/1 frame.

    ``headers`` is an iterable of ``(key, value)`` pairs (str, or bytes that
    are valid UTF-8) or a dict; wire order is iteration order.
    ``sequence`` must be 1..2**64-1 and ``publisher_id`` nonzero (u64).
    ``flags``: 0, or FLAG_RETAIN (0x01) for a retained post (section 18); other bits only so
    tests can build frames with reserved bits set.  ``max_payload`` (default
    1 MiB, the default receiver limit) rejects payloads receivers would drop;
    pass None to disable.  Raises ValueError/TypeError on any violation.
    """
    name_b = validate_name(name).encode("utf-8")
    payload = bytes(payload)
    if max_payload is not None and len(payload) > max_payload:
        raise ValueError(f"payload is {len(payload)} bytes > maximum {max_payload}")
    hmap, count = _encode_headers(headers)
    fixed = _FIXED.pack(
        VERSION,
        _check_uint(flags, 8, "flags"),
        _check_uint(content_type, 8, "content_type"),
        len(name_b),
        len(hmap),
        count,
        0,
        _check_uint(sequence, 64, "sequence", 1),
        _check_uint(publisher_id, 64, "publisher_id", 1),
        _check_uint(timestamp_ns, 64, "timestamp_ns"),
    )
    return name_b + b"\x00" + fixed + hmap + payload


def encode_batch(frames: Sequence[BytesLike]) -> bytes:
    """Build one batch frame (version 2) from 1..1024 version 1 frames of one
    name and one publisher id (``encode``'s output), keeping their order.

    Each record keeps its frame's flags, content type, sequence, timestamp,
    headers and payload; the name and publisher id are written once.  Raises
    ValueError if the frames are not valid, differ in name or publisher, carry
    a control name (first token ``_nbus``: never batched), or would make a
    frame larger than ``MAX_BATCH_FRAME`` (section 2.3).
    """
    frames = [bytes(f) for f in frames]
    if not 1 <= len(frames) <= MAX_BATCH_RECORDS:
        raise ValueError(f"a batch holds 1..{MAX_BATCH_RECORDS} notifications, got {len(frames)}")
    first = decode([frames[0]], max_payload=1 << 32)
    if first.name.split(".", 1)[0] == CONTROL_TOKEN:
        raise ValueError(f"control messages are never batched: {first.name}")
    name_b = first.name.encode("utf-8")
    out = bytearray(name_b + b"\x00")
    out += _BATCH.pack(BATCH_VERSION, 0, len(name_b), 0, len(frames), 0, first.publisher_id)
    for frame in frames:
        n = decode([frame], max_payload=1 << 32)
        if n.name != first.name or n.publisher_id != first.publisher_id:
            raise ValueError("a batch's notifications share one name and one publisher id")
        hmap, count = _encode_headers(n.headers)
        out += _RECORD.pack(n.flags, n.content_type, count, 0, len(hmap), len(n.payload),
                            n.sequence, n.timestamp)
        out += hmap + n.payload
    if len(out) > MAX_BATCH_FRAME:
        raise ValueError(f"a batch frame of {len(out)} bytes is over {MAX_BATCH_FRAME}: send fewer per batch")
    return bytes(out)


# --------------------------------------------------------------------------
# Decoding

def decode(frames: Sequence[BytesLike], max_payload: int = DEFAULT_MAX_PAYLOAD) -> Notification:
    """Parse one received ZeroMQ message (the list of all its frames).

    Runs the NBP/1 receiver checks in the normative order and raises
    ``Rejected(reason)`` at the first failure.  ``max_payload`` is the
    receiver's payload limit in bytes.
    """
    name, name_b, rest = _name_and_rest(frames)
    # 6
    if rest[0] != VERSION:
        raise Rejected(UNSUPPORTED_VERSION, f"version {rest[0]}")
    return _decode_single(name, name_b, rest, max_payload)


def decode_all(frames: Sequence[BytesLike], max_payload: int = DEFAULT_MAX_PAYLOAD) -> Tuple[Notification, ...]:
    """Parse one received ZeroMQ message into its notifications, in order.

    A version 1 frame gives one notification, a batch frame (version 2) its
    records, all of one name and one publisher.  Every NBP/1 receiver must
    accept both; a batch is all or nothing (any fault rejects the whole
    frame, and ``Rejected.records`` says how many notifications it declared,
    where its header says and no more than its bytes can hold: section 7.5).
    """
    name, name_b, rest = _name_and_rest(frames)
    # 6
    if rest[0] == VERSION:
        return (_decode_single(name, name_b, rest, max_payload),)
    if rest[0] != BATCH_VERSION:
        raise Rejected(UNSUPPORTED_VERSION, f"version {rest[0]}")
    try:
        return _decode_batch(name, name_b, rest, max_payload)
    except Rejected as e:
        # Whatever step rejected it, the count is reported when the header holds a valid one.
        e.records = _declared_count(rest)
        raise


def _decode_batch(name: str, name_b: bytes, rest: bytes, max_payload: int) -> Tuple[Notification, ...]:
    """Steps B0-B5 and R1-R6 of a batch frame (section 7.5)."""
    # B0
    if name.split(".", 1)[0] == CONTROL_TOKEN:
        raise Rejected(BATCH_INVALID, "a control message (first token _nbus) is never batched")
    # B1
    if len(rest) < BATCH_HEADER_SIZE:
        raise Rejected(TRUNCATED_HEADER, f"{len(rest)} of {BATCH_HEADER_SIZE} batch-header bytes")
    _, _, name_len, _, count, _, publisher_id = _BATCH.unpack_from(rest, 0)
    # B2
    if name_len != len(name_b):
        raise Rejected(NAME_LENGTH_MISMATCH, f"nameLength {name_len}, actual {len(name_b)}")
    # B3
    if not 1 <= count <= MAX_BATCH_RECORDS:
        raise Rejected(BATCH_INVALID, f"recordCount {count}")
    # B4
    frame_len = len(name_b) + 1 + len(rest)
    bound = batch_frame_limit(max_payload)
    if frame_len > bound:
        raise Rejected(PAYLOAD_TOO_LARGE, f"batch frame of {frame_len} bytes > {bound}")
    out = []
    pos = BATCH_HEADER_SIZE
    for i in range(count):
        # R1
        if len(rest) - pos < BATCH_RECORD_HEADER_SIZE:
            raise Rejected(TRUNCATED_HEADER, f"record {i}: fixed part cut short")
        (flags, content_type, header_count, reserved, headers_len, payload_len,
         sequence, timestamp) = _RECORD.unpack_from(rest, pos)
        # R2
        if header_count > MAX_HEADER_COUNT or headers_len > MAX_HEADERS_LENGTH:
            raise Rejected(HEADER_LIMIT_EXCEEDED,
                           f"record {i}: headerCount {header_count}, headersLength {headers_len}")
        pos += BATCH_RECORD_HEADER_SIZE
        # R3
        if len(rest) - pos < headers_len:
            raise Rejected(TRUNCATED_HEADER, f"record {i}: headersLength {headers_len} runs past the frame")
        # R4
        headers = _decode_headers(rest[pos:pos + headers_len], header_count)
        pos += headers_len
        # R5
        if payload_len > max_payload:
            raise Rejected(PAYLOAD_TOO_LARGE, f"record {i}: {payload_len} > {max_payload}")
        # R6
        if len(rest) - pos < payload_len:
            raise Rejected(TRUNCATED_HEADER, f"record {i}: payloadLength {payload_len} runs past the frame")
        payload = rest[pos:pos + payload_len]
        pos += payload_len
        out.append(Notification(
            name=name, payload=payload, headers=headers, content_type=content_type,
            sequence=sequence, publisher_id=publisher_id, timestamp=timestamp,
            version=BATCH_VERSION, flags=flags, reserved=reserved,
        ))
    # B5
    if pos != len(rest):
        raise Rejected(BATCH_INVALID, f"{len(rest) - pos} bytes after the last record")
    return tuple(out)


def batch_frame_limit(max_payload: int = DEFAULT_MAX_PAYLOAD) -> int:
    """The largest batch frame a receiver whose payload limit is ``max_payload``
    accepts (step B4): ``4384 + max(max_payload, 1048576)``.  A producer keeps
    every batch within ``MAX_BATCH_FRAME`` (``batch_frame_limit()``), which
    every receiver accepts whatever its own limit."""
    return MAX_NAME_BYTES + 1 + FIXED_HEADER_SIZE + MAX_HEADERS_LENGTH + max(max_payload, DEFAULT_MAX_PAYLOAD)


def _declared_count(rest: bytes) -> Optional[int]:
    """The batch header's recordCount when the header is there and the count is 1..1024, no
    more than the frame's bytes can hold (``_records_room``)."""
    if len(rest) < BATCH_HEADER_SIZE or rest[0] != BATCH_VERSION:
        return None
    count = _BATCH.unpack_from(rest, 0)[4]
    return _records_room(count, rest) if 1 <= count <= MAX_BATCH_RECORDS else None


def _records_room(count: int, rest: bytes) -> Optional[int]:
    """A declared record count, no more than the batch's bytes can hold (a record's fixed part
    is 26 bytes; section 7.5): a header that lies cannot inflate a count.  ``None`` when there is
    no room for one record."""
    room = (len(rest) - BATCH_HEADER_SIZE) // BATCH_RECORD_HEADER_SIZE
    return min(count, room) if room >= 1 else None


def declared_record_count(frame: BytesLike) -> Optional[int]:
    """The record count a batch frame declares (1..1024), no more than its
    bytes can hold, without validating the records; ``None`` for anything else (a version 1 frame, a batch
    header cut short, a count of 0 or over 1024).  What a rejected batch
    reports (``Rejected.records``)."""
    frame = bytes(frame)
    nul = frame.find(b"\x00", 0, MAX_NAME_BYTES + 1)
    return _declared_count(frame[nul + 1:]) if nul >= 0 else None


def unmatched_notification_count(frame: BytesLike) -> int:
    """How many notifications a frame counts as when a receiver discards it
    by its name without decoding it (section 7.1, "MAY skip"): a batch's
    declared count when ``declared_record_count`` gives one, else 1 (a
    version 1 frame, and a batch whose header is cut short or whose count
    is 0 or over 1024: the frame itself)."""
    return declared_record_count(frame) or 1


def _name_and_rest(frames: Sequence[BytesLike]) -> Tuple[str, bytes, bytes]:
    """Steps 1-5, shared by both frame kinds."""
    if isinstance(frames, (bytes, bytearray, memoryview, str)):
        raise TypeError("decode() takes a list of frames, not a single buffer")
    frames = list(frames)
    # 1
    if len(frames) != 1:
        raise Rejected(WRONG_FRAME_COUNT, f"{len(frames)} frames")
    frame = bytes(frames[0])
    # 2
    nul = frame.find(b"\x00", 0, MAX_NAME_BYTES + 1)
    if nul < 0:
        raise Rejected(MISSING_NAME_TERMINATOR, "no 0x00 in the first 256 bytes")
    name_b = frame[:nul]
    # 3
    name = _utf8(name_b)
    if name is None:
        raise Rejected(INVALID_UTF8, "name")
    # 4
    problem = _name_problem(name_b)
    if problem:
        raise Rejected(INVALID_NAME, problem)
    rest = frame[nul + 1:]
    # 5
    if not rest:
        raise Rejected(TRUNCATED_HEADER, "nothing after the name terminator")
    return name, name_b, rest


def _decode_single(name: str, name_b: bytes, rest: bytes, max_payload: int) -> Notification:
    """Steps 7-12 of a version 1 frame."""
    # 7
    if len(rest) < FIXED_HEADER_SIZE:
        raise Rejected(TRUNCATED_HEADER, f"{len(rest)} of {FIXED_HEADER_SIZE} fixed-header bytes")
    (version, flags, content_type, name_len, headers_len, header_count, reserved,
     sequence, publisher_id, timestamp) = _FIXED.unpack_from(rest, 0)
    # 8
    if name_len != len(name_b):
        raise Rejected(NAME_LENGTH_MISMATCH, f"nameLength {name_len}, actual {len(name_b)}")
    # 9
    if header_count > MAX_HEADER_COUNT or headers_len > MAX_HEADERS_LENGTH:
        raise Rejected(HEADER_LIMIT_EXCEEDED, f"headerCount {header_count}, headersLength {headers_len}")
    # 10
    if FIXED_HEADER_SIZE + headers_len > len(rest):
        raise Rejected(TRUNCATED_HEADER, f"headersLength {headers_len} runs past the frame")
    # 11
    hmap = rest[FIXED_HEADER_SIZE:FIXED_HEADER_SIZE + headers_len]
    headers = _decode_headers(hmap, header_count)
    # 12
    payload = rest[FIXED_HEADER_SIZE + headers_len:]
    if len(payload) > max_payload:
        raise Rejected(PAYLOAD_TOO_LARGE, f"{len(payload)} > {max_payload}")
    return Notification(
        name=name, payload=payload, headers=headers, content_type=content_type,
        sequence=sequence, publisher_id=publisher_id, timestamp=timestamp,
        version=version, flags=flags, reserved=reserved,
    )


def _decode_headers(hmap: bytes, count: int) -> Tuple[Tuple[str, str], ...]:
    end = len(hmap)
    pos = 0
    out = []
    seen = set()
    for i in range(count):
        if end - pos < 1:
            raise Rejected(HEADER_MAP_INVALID, f"entry {i}: no keyLength byte")
        klen = hmap[pos]
        pos += 1
        if klen == 0:
            raise Rejected(HEADER_MAP_INVALID, f"entry {i}: keyLength 0")
        if klen > MAX_KEY_BYTES:
            raise Rejected(HEADER_LIMIT_EXCEEDED, f"entry {i}: keyLength {klen}")
        if end - pos < klen:
            raise Rejected(HEADER_MAP_INVALID, f"entry {i}: key truncated")
        kraw = hmap[pos:pos + klen]
        pos += klen
        if end - pos < 2:
            raise Rejected(HEADER_MAP_INVALID, f"entry {i}: no valueLength")
        vlen = (hmap[pos] << 8) | hmap[pos + 1]
        pos += 2
        if vlen > MAX_VALUE_BYTES:
            raise Rejected(HEADER_LIMIT_EXCEEDED, f"entry {i}: valueLength {vlen}")
        if end - pos < vlen:
            raise Rejected(HEADER_MAP_INVALID, f"entry {i}: value truncated")
        vraw = hmap[pos:pos + vlen]
        pos += vlen
        key = _utf8(kraw)
        if key is None:
            raise Rejected(INVALID_UTF8, f"entry {i}: key")
        if b"\x00" in kraw:
            raise Rejected(HEADER_MAP_INVALID, f"entry {i}: key contains NUL")
        value = _utf8(vraw)
        if value is None:
            raise Rejected(INVALID_UTF8, f"entry {i}: value")
        if kraw in seen:
            raise Rejected(HEADER_MAP_INVALID, f"entry {i}: duplicate key {key!r}")
        seen.add(kraw)
        out.append((key, value))
    if pos != end:
        raise Rejected(HEADER_MAP_INVALID, f"{end - pos} bytes left in the header map")
    return tuple(out)


# --------------------------------------------------------------------------
# Sequence numbers

def _random_publisher_id() -> int:
    while True:
        pid = secrets.randbits(64)
        if pid:
            return pid


class PublisherState:
    """Publisher-side state: a random nonzero ``publisher_id`` chosen once at
    start, and a sequence counter per name (first message of a name is 1).

    Create one per publisher process lifetime; a restarted publisher gets a
    new id, which tells receivers its sequences restart at 1.
    """

    def __init__(self, publisher_id: Optional[int] = None):
        if publisher_id is None:
            publisher_id = _random_publisher_id()
        self.publisher_id = _check_uint(publisher_id, 64, "publisher_id", 1)
        self._last: Dict[str, int] = {}

    def next_sequence(self, name: Text) -> int:
        """Consume and return the next sequence number for ``name``."""
        key = validate_name(name)
        seq = self._last.get(key, 0) + 1
        if seq > U64_MAX:
            raise OverflowError("sequence number exhausted; start a new publisher id")
        self._last[key] = seq
        return seq

    def last_sequence(self, name: Text) -> int:
        """The last sequence number used for ``name`` (0 if none yet)."""
        return self._last.get(validate_name(name), 0)

    def encode(
        self,
        name: Text,
        payload: BytesLike = b"",
        headers: Iterable[Tuple[Text, Text]] = (),
        *,
        content_type: int = 0,
        timestamp_ns: Optional[int] = None,
        max_payload: Optional[int] = DEFAULT_MAX_PAYLOAD,
    ) -> bytes:
        """Encode the next message for ``name``.  The sequence number is only
        consumed if encoding succeeds, so a rejected message leaves no gap."""
        key = validate_name(name)
        seq = self._last.get(key, 0) + 1
        frame = encode(
            key, payload, headers, sequence=seq, publisher_id=self.publisher_id,
            timestamp_ns=time.time_ns() if timestamp_ns is None else timestamp_ns,
            content_type=content_type, max_payload=max_payload,
        )
        self._last[key] = seq
        return frame


class SequenceTracker:
    """Receiver-side gap detection per ``(publisher_id, name)`` stream.

    ``observe`` returns how many messages were lost immediately before this
    one (0 when in order or for the first message seen on a stream).  A
    sequence at or below the last one seen is counted in ``regressions`` and
    does not move the stream backwards.  Sequence numbers never cause a
    message to be dropped.
    """

    def __init__(self) -> None:
        self._last: Dict[Tuple[int, str], int] = {}
        self.lost = 0
        self.regressions = 0

    def observe(self, publisher_id: int, name: str, sequence: int) -> int:
        key = (publisher_id, name)
        last = self._last.get(key)
        if last is None:
            self._last[key] = sequence
            return 0
        if sequence <= last:
            self.regressions += 1
            return 0
        missing = sequence - last - 1
        self._last[key] = sequence
        self.lost += missing
        return missing

    def forget(self, publisher_id: int, name: Optional[str] = None) -> None:
        """Drop state for one stream, or for every stream of a publisher."""
        for key in [k for k in self._last if k[0] == publisher_id and (name is None or k[1] == name)]:
            del self._last[key]


# --- Request and reply (NBP-1 section 16) ---------------------------------------------------

REPLY_TO = "reply-to"
STATUS = "status"


def inbox_name(requester_id: int, number: int) -> str:
    """NotificationBus's reply name for a requester's ``number``-th request:
    ``_inbox.<publisher id, 16 hex digits>.<number>``."""
    _check_uint(requester_id, 64, "requester_id", 1)
    _check_uint(number, 64, "number")
    return validate_name("_inbox.%016x.%d" % (requester_id, number))


def request_headers(reply_to: Text, headers: Iterable[Tuple[Text, Text]] = ()) -> Tuple[Tuple[str, str], ...]:
    """``headers`` with ``reply-to`` set to ``reply_to`` (a valid name), replacing any earlier one."""
    name = validate_name(reply_to)
    kept = tuple((str(k), str(v)) for k, v in headers if k != REPLY_TO)
    return kept + ((REPLY_TO, name),)


def reply_to(notification: "Notification") -> Optional[str]:
    """Where the reply to ``notification`` goes: its valid ``reply-to`` header, or None (no reply)."""
    for key, value in notification.headers:
        if key == REPLY_TO:
            try:
                return validate_name(value)
            except ValueError:
                return None
    return None


def reply_headers(error: bool = False, headers: Iterable[Tuple[Text, Text]] = ()) -> Tuple[Tuple[str, str], ...]:
    """A reply's headers: ``status`` ``ok`` or ``error`` after ``headers``."""
    kept = tuple((str(k), str(v)) for k, v in headers if k != STATUS)
    return kept + ((STATUS, "error" if error else "ok"),)


# --------------------------------------------------------------------------
# Retained values (section 18)

#: Flag bit a producer sets: keep this as the name's current value (empty payload: clear it).
FLAG_RETAIN = 0x01
#: Flag bit on a kept value handed to a new subscription from a store (a broker's snapshot).
FLAG_RETAINED_COPY = 0x02
#: Every snapshot reply name starts with this.
RETAINED_REPLY_PREFIX = "_nbus.retained."


def is_retained(notification: "Notification") -> bool:
    """Whether ``notification`` is a kept value delivered to a new subscription (bit 0x02)."""
    return bool(notification.flags & FLAG_RETAINED_COPY)


def asks_to_retain(notification: "Notification") -> bool:
    """Whether its producer asked for it to be kept as the name's current value (bit 0x01)."""
    return bool(notification.flags & FLAG_RETAIN)


def retained_reply_name(bus_id: int, number: int) -> str:
    """``_nbus.retained.<bus id, 16 hex>.<n>``: the name a snapshot arrives under."""
    return f"{RETAINED_REPLY_PREFIX}{bus_id:016x}.{number}"


def retained_request_topic(bus_id: int, number: int, pattern: str) -> bytes:
    """The subscription that asks a broker for the retained values ``pattern`` matches;
    subscribe ``retained_reply_name(...)`` + NUL first, on the same socket."""
    Pattern.compile(pattern)  # validates (raises on an invalid pattern)
    return b"\x00nbus.retained." + f"{bus_id:016x}.{number}.{pattern}".encode("utf-8")


def retained_snapshot_entries(
    notification: "Notification", max_payload: int = DEFAULT_MAX_PAYLOAD
) -> Tuple["Notification", ...]:
    """The kept notifications one snapshot frame carries (its payload: repeated u32 length and one
    version 1 frame). Raises Rejected("batchInvalid") when the lengths do not fill the payload."""
    payload = notification.payload
    out = []
    position = 0
    while position < len(payload):
        if len(payload) - position < 4:
            raise Rejected("batchInvalid")
        (length,) = struct.unpack_from("!I", payload, position)
        position += 4
        if len(payload) - position < length:
            raise Rejected("batchInvalid")
        out.append(decode([payload[position:position + length]], max_payload=max_payload))
        position += length
    return tuple(out)
