#!/usr/bin/env python3
"""Generate protocol/vectors/valid.json and invalid.json (version 1 frames),
and batch-valid.json and batch-invalid.json (batch frames, version 2).

Deterministic: running it twice gives byte-identical files, and
test_nbp.py checks that the committed files equal this script's output.

    python3 protocol/python/make_vectors.py          # (re)write the files
    python3 protocol/python/make_vectors.py --check  # exit 1 if out of date

Valid frames are built with nbp.encode() (except the deliberately
non-canonical ones); invalid frames are assembled by hand with raw_frame()
so that every field can be wrong on purpose.  The "decoded" expectations are
written from the inputs, not from nbp.decode().
"""

from __future__ import annotations

import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import nbp  # noqa: E402

VECTOR_DIR = os.path.join(os.path.dirname(HERE), "vectors")
VALID_PATH = os.path.join(VECTOR_DIR, "valid.json")
INVALID_PATH = os.path.join(VECTOR_DIR, "invalid.json")
BATCH_VALID_PATH = os.path.join(VECTOR_DIR, "batch-valid.json")
BATCH_INVALID_PATH = os.path.join(VECTOR_DIR, "batch-invalid.json")

PID = 0x123456789ABCDEF0          # 1311768467463790320
TS = 1700000000000000000          # 2023-11-14T22:13:20Z
U64_MAX = (1 << 64) - 1
DEFAULT_MAX = nbp.DEFAULT_MAX_PAYLOAD


# --------------------------------------------------------------------------
# Raw builders (no validation at all)

def entry(key: bytes, value: bytes, key_len: int | None = None, value_len: int | None = None) -> bytes:
    """One header-map entry; lengths may be overridden to lie."""
    kl = len(key) if key_len is None else key_len
    vl = len(value) if value_len is None else value_len
    return bytes([kl]) + key + struct.pack("!H", vl) + value


def raw_frame(name: bytes, *, version=1, flags=0, content_type=0, name_len=None,
              headers_len=None, header_count=None, reserved=0, sequence=1,
              publisher_id=PID, timestamp=TS, hmap=b"", entries=0, payload=b"") -> bytes:
    """name | 0x00 | fixed header | hmap | payload, every field overridable."""
    fixed = struct.pack(
        "!BBBBHBBQQQ", version, flags, content_type,
        (len(name) if name_len is None else name_len) & 0xFF,
        len(hmap) if headers_len is None else headers_len,
        entries if header_count is None else header_count,
        reserved, sequence, publisher_id, timestamp,
    )
    return name + b"\x00" + fixed + hmap + payload


# --------------------------------------------------------------------------
# Valid vectors

def valid_vectors() -> list:
    out = []

    def add(vid, description, name, payload=b"", headers=(), *, content_type=0,
            sequence=1, publisher_id=PID, timestamp=TS, max_payload=None):
        frame = nbp.encode(name, payload, headers, sequence=sequence, publisher_id=publisher_id,
                           timestamp_ns=timestamp, content_type=content_type, max_payload=None)
        v = {"id": vid, "description": description, "frames": [frame.hex()]}
        if max_payload is not None:
            v["maxPayload"] = max_payload
        v["expect"] = "valid"
        v["canonical"] = True
        v["decoded"] = decoded(name, payload, headers, content_type, sequence, publisher_id, timestamp)
        out.append(v)

    def decoded(name, payload, headers, content_type, sequence, publisher_id, timestamp, flags=0):
        return {
            "name": name, "version": 1, "flags": flags, "contentType": content_type,
            "sequence": str(sequence), "publisherId": str(publisher_id), "timestamp": str(timestamp),
            "headers": [[k, v] for k, v in headers], "payloadHex": bytes(payload).hex(),
        }

    add("basic-json", "The annotated example of NBP-1.md: JSON payload, one header.",
        "orders.created", b'{"id":42}', [("trace", "abc")], content_type=2)
    add("minimal", "Single-token one-byte name, no headers, empty payload, content type 0.", "a")
    add("text-payload-two-headers", "text/plain payload with two headers kept in wire order (not sorted).",
        "chat.message.posted", "hello, bus".encode(), [("user", "ada"), ("room", "general")],
        content_type=1, sequence=7, timestamp=TS + 123456789)
    name255 = ".".join(["abcdefghijklmno"] * 16)  # 16*15 + 15 dots = 255 bytes
    assert len(name255.encode()) == 255
    add("name-255-bytes", "Longest legal name: 255 bytes (its NUL is byte 255, the last one the receiver scans).",
        name255, b"x")
    add("multibyte-utf8-name", "Name with multi-byte UTF-8 (2- and 3-byte sequences): 'café.订单'; nameLength counts bytes (12).",
        "café.订单", b"{}", content_type=2)
    add("name-punctuation", "Names may contain any printable byte except '*' and '>' (here '-', '_', ':', '#', '+', '~').",
        "svc-a:v1.user_created.#tag+x~", b"")
    add("emoji-4-byte-utf8-name", "4-byte UTF-8 sequence (U+1F514) inside a name.",
        "alerts.\U0001F514.raised", b"ring")
    add("headers-32", "Exactly 32 headers (the maximum count).",
        "limits.headers", b"", [(f"k{i:02d}", f"v{i}") for i in range(32)])
    add("key-64-bytes", "Header key of exactly 64 bytes (the maximum).",
        "limits.key", b"", [("K" * 64, "v")])
    add("value-1024-bytes", "Header value of exactly 1024 bytes (the maximum).",
        "limits.value", b"", [("big", "v" * 1024)])
    add("headers-length-4096", "Header map of exactly 4096 bytes (the maximum): 4 entries of 1+3+2+1018 bytes.",
        "limits.map", b"", [(f"h{i:02d}", chr(ord("a") + i) * 1018) for i in range(4)])
    add("empty-header-value", "A header whose value is empty (valueLength 0).",
        "orders.cancelled", b"", [("reason", "")])
    add("utf8-header", "Non-ASCII header key and value.",
        "geo.updated", b"", [("région", "Zürich 東京")], content_type=0)
    add("keys-differ-only-in-normalization",
        "Keys 'é' (c3 a9) and 'e'+U+0301 (65 cc 81) are canonically equivalent but different bytes: not duplicates (keys compare byte-wise).",
        "unicode.keys", b"", [("\u00e9", "nfc"), ("e\u0301", "nfd")])
    add("header-value-contains-nul", "Header VALUES may contain U+0000 (only keys are forbidden to).",
        "odd.value", b"", [("k", "a\x00b")])
    add("binary-payload", "Payload is opaque: bytes that are not UTF-8 (ff fe 00 80 c0) are fine.",
        "blob.stored", bytes([0xFF, 0xFE, 0x00, 0x80, 0xC0]), content_type=5)
    add("payload-contains-nul", "Only the FIRST 0x00 ends the name; the payload may contain 0x00 and look like a frame.",
        "x.y", b"a\x00b\x00" + b"x.y\x00\x01", content_type=0)
    add("content-type-200", "Application-defined content type 200 is accepted.",
        "app.custom", b"\x01\x02", content_type=200)
    add("content-type-reserved-99", "Reserved content type 99 must not be rejected either.",
        "app.future", b"\x03", content_type=99)
    add("u64-max-fields", "sequence, publisherId and timestamp all 2^64-1: big-endian, decimal strings.",
        "edge.u64", b"", sequence=U64_MAX, publisher_id=U64_MAX, timestamp=U64_MAX)
    add("payload-at-max", "Payload exactly at the receiver's maxPayload (16) is accepted.",
        "limits.payload", b"0123456789abcdef", max_payload=16)
    add("empty-payload-at-max-zero", "maxPayload 0 still accepts an empty payload.",
        "limits.zero", b"", max_payload=0)

    # Request and reply (section 16): ordinary notifications with a reply-to or status header.
    add("request-reply-to", "A request: the reply-to header names the requester's unique reply name (_inbox.<requester hex>.<n>).",
        "math.double", b"21", nbp.request_headers(nbp.inbox_name(PID, 7)), content_type=1)
    add("reply-status-error", "An error reply, posted to the request's reply-to name: status error, the reason as payload.",
        nbp.inbox_name(PID, 7), b"division by zero", nbp.reply_headers(error=True), content_type=1)

    # Retained values (section 18): the two flag bits, as a conforming producer and a broker write them.
    frame = raw_frame(b"prices.eur", flags=0x01, content_type=1, payload=b"1.08", sequence=7)
    out.append({"id": "retain-flag", "description": "flags = 0x01: a retained post (keep it as the name's current value).",
                "frames": [frame.hex()], "expect": "valid", "canonical": False,
                "decoded": decoded("prices.eur", b"1.08", (), 1, 7, PID, TS, flags=0x01)})
    # Another name: one stream's sequence 7 twice would be a duplicate to a receiver reading all vectors.
    frame = raw_frame(b"prices.usd", flags=0x03, content_type=1, payload=b"1.16", sequence=7)
    out.append({"id": "retained-copy-flags", "description": "flags = 0x03: a kept value handed to a new subscription "
                                                         "(retain and retained copy), as a broker's snapshot carries it.",
                "frames": [frame.hex()], "expect": "valid", "canonical": False,
                "decoded": decoded("prices.usd", b"1.16", (), 1, 7, PID, TS, flags=0x03)})
    add("typed-message-subject", "A NotificationBus message type (section 9.1): the subject's id as the last name token, "
        "the value as JSON (keys in declaration order), content type 2, no headers.",
        "orders.shipped.A-1042", b'{"carrier":"dhl","weight":1.5}', content_type=2)

    # Non-canonical: reserved bits set; receivers ignore them.
    frame = raw_frame(b"flags.set", flags=0xA5, content_type=2, payload=b"[]")
    out.append({"id": "nonzero-flags", "description": "flags = 0xa5: receivers ignore unknown flag bits and report them.",
                "frames": [frame.hex()], "expect": "valid", "canonical": False,
                "decoded": decoded("flags.set", b"[]", (), 2, 1, PID, TS, flags=0xA5)})
    hm = entry(b"k", b"v")
    frame = raw_frame(b"reserved.set", reserved=0xFF, hmap=hm, entries=1, payload=b"p")
    out.append({"id": "nonzero-reserved", "description": "Reserved byte (offset 7) = 0xff is ignored.",
                "frames": [frame.hex()], "expect": "valid", "canonical": False,
                "decoded": decoded("reserved.set", b"p", [("k", "v")], 0, 1, PID, TS)})
    return out


# --------------------------------------------------------------------------
# Invalid vectors

def invalid_vectors() -> list:
    out = []

    def add(vid, description, frames, reason, max_payload=None):
        v = {"id": vid, "description": description, "frames": [f.hex() for f in frames]}
        if max_payload is not None:
            v["maxPayload"] = max_payload
        v["expect"] = "reject"
        v["reason"] = reason
        out.append(v)

    good = nbp.encode("orders.created", b'{"id":42}', [("trace", "abc")], sequence=1,
                      publisher_id=PID, timestamp_ns=TS, content_type=2)
    R = nbp

    # 1 wrongFrameCount
    add("zero-frames", "A message with no frames (only possible through an API; libzmq never delivers it).",
        [], R.WRONG_FRAME_COUNT)
    add("two-frames", "A valid frame followed by an empty second frame.", [good, b""], R.WRONG_FRAME_COUNT)
    add("two-frames-split", "Name and rest split across two frames (the layout of a two-frame protocol).",
        [b"orders.created\x00", good[len(b"orders.created\x00"):]], R.WRONG_FRAME_COUNT)

    # 2 missingNameTerminator
    add("empty-frame", "A single empty frame: no terminator.", [b""], R.MISSING_NAME_TERMINATOR)
    add("no-terminator", "Name bytes without a 0x00.", [b"orders.created"], R.MISSING_NAME_TERMINATOR)
    name256 = (".".join(["abcdefghijklmno"] * 16) + "p").encode()
    assert len(name256) == 256
    add("name-256-bytes", "256-byte name: its 0x00 is byte 256, outside the first 256 bytes.",
        [raw_frame(name256, name_len=0)], R.MISSING_NAME_TERMINATOR)

    # 3 invalidUTF8 (name)
    add("name-overlong-utf8", "Overlong encoding c0 ae ('.' in 2 bytes) in the name.",
        [raw_frame(b"a\xc0\xaeb")], R.INVALID_UTF8)
    add("name-overlong-3-byte", "Overlong 3-byte encoding e0 80 af in the name.",
        [raw_frame(b"a.\xe0\x80\xaf")], R.INVALID_UTF8)
    add("name-surrogate", "UTF-16 surrogate U+D800 encoded as ed a0 80.",
        [raw_frame(b"a.\xed\xa0\x80")], R.INVALID_UTF8)
    add("name-above-10ffff", "f4 90 80 80 encodes U+110000, above the Unicode range.",
        [raw_frame(b"a.\xf4\x90\x80\x80")], R.INVALID_UTF8)
    add("name-truncated-sequence", "Name ends in the middle of a 3-byte sequence (e8 ae).",
        [raw_frame(b"orders.\xe8\xae")], R.INVALID_UTF8)
    add("name-bad-utf8-and-space", "Both invalid UTF-8 (ff) and a space: UTF-8 is checked first.",
        [raw_frame(b"a b\xff")], R.INVALID_UTF8)

    # 4 invalidName
    add("empty-name", "Frame starts with 0x00: empty name.", [raw_frame(b"")], R.INVALID_NAME)
    add("name-empty-token", "Doubled dot 'a..b'.", [raw_frame(b"a..b")], R.INVALID_NAME)
    add("name-trailing-dot", "Trailing dot 'orders.'.", [raw_frame(b"orders.")], R.INVALID_NAME)
    add("name-leading-dot", "Leading dot '.orders'.", [raw_frame(b".orders")], R.INVALID_NAME)
    add("name-space", "Space in the name.", [raw_frame(b"orders created")], R.INVALID_NAME)
    add("name-control-char", "DEL (0x7f) in the name.", [raw_frame(b"orders.\x7f")], R.INVALID_NAME)
    add("name-tab", "Tab (0x09) in the name.", [raw_frame(b"a\tb")], R.INVALID_NAME)
    add("name-wildcard-star", "A concrete name may not contain '*'.", [raw_frame(b"orders.*")], R.INVALID_NAME)
    add("name-wildcard-gt", "A concrete name may not contain '>'.", [raw_frame(b"orders.>")], R.INVALID_NAME)
    add("name-wildcard-inside-token", "'*' inside a token.", [raw_frame(b"ord*ers")], R.INVALID_NAME)
    add("empty-name-only-nul", "A frame that is just 0x00: the empty name is reported before the missing header.",
        [b"\x00"], R.INVALID_NAME)

    # 5 truncatedHeader (nothing after the NUL)
    add("nothing-after-terminator", "Name and 0x00, then end of frame.", [b"a\x00"], R.TRUNCATED_HEADER)

    # 6 unsupportedVersion (2 is a batch: batch-invalid.json)
    add("version-3", "Complete frame with version 3.", [raw_frame(b"a.b", version=3)], R.UNSUPPORTED_VERSION)
    add("version-0", "Complete frame with version 0.", [raw_frame(b"a.b", version=0)], R.UNSUPPORTED_VERSION)
    add("version-3-short", "Version byte 3 and nothing else: version is checked before header length.",
        [b"a.b\x00\x03"], R.UNSUPPORTED_VERSION)

    # 7 truncatedHeader (fixed header short)
    add("fixed-header-31-bytes", "Only 31 of the 32 fixed-header bytes.",
        [raw_frame(b"a.b")[:-1]], R.TRUNCATED_HEADER)
    add("fixed-header-1-byte", "Just the version byte.", [b"a.b\x00\x01"], R.TRUNCATED_HEADER)

    # 8 nameLengthMismatch
    add("name-length-mismatch", "nameLength says 4, the name has 3 bytes.",
        [raw_frame(b"a.b", name_len=4)], R.NAME_LENGTH_MISMATCH)
    add("name-length-counts-chars", "nameLength 7 for 'café.订单' counts characters; it must count bytes (12).",
        [raw_frame("café.订单".encode(), name_len=7)], R.NAME_LENGTH_MISMATCH)
    add("name-length-before-limits", "nameLength wrong AND headerCount 33: nameLength is checked first.",
        [raw_frame(b"a.b", name_len=9, header_count=33)], R.NAME_LENGTH_MISMATCH)

    # 9 headerLimitExceeded (count / total length)
    hm33 = b"".join(entry(f"k{i:02d}".encode(), b"v") for i in range(33))
    add("headers-33", "33 headers (one over the limit).",
        [raw_frame(b"limits.headers", hmap=hm33, entries=33)], R.HEADER_LIMIT_EXCEEDED)
    add("headers-length-4097", "headersLength 4097 with a short frame: the limit is checked before truncation.",
        [raw_frame(b"limits.map", headers_len=4097, header_count=1, hmap=entry(b"k", b"v"), entries=1)],
        R.HEADER_LIMIT_EXCEEDED)

    # 10 truncatedHeader (map runs past frame)
    add("headers-length-past-frame", "headersLength 20 but only 7 bytes follow the fixed header.",
        [raw_frame(b"a.b", headers_len=20, hmap=entry(b"k", b"abc"), entries=1)], R.TRUNCATED_HEADER)

    # 11 header map walk
    add("key-length-zero", "An entry with keyLength 0.",
        [raw_frame(b"a.b", hmap=entry(b"", b"v"), entries=1)], R.HEADER_MAP_INVALID)
    add("key-65-bytes", "Header key of 65 bytes.",
        [raw_frame(b"a.b", hmap=entry(b"K" * 65, b"v"), entries=1)], R.HEADER_LIMIT_EXCEEDED)
    add("key-length-200-truncated", "keyLength 200 with only 3 bytes after it: the limit is checked before availability.",
        [raw_frame(b"a.b", hmap=b"\xc8abc", entries=1)], R.HEADER_LIMIT_EXCEEDED)
    add("value-1025-bytes", "Header value of 1025 bytes.",
        [raw_frame(b"a.b", hmap=entry(b"big", b"v" * 1025), entries=1)], R.HEADER_LIMIT_EXCEEDED)
    add("value-length-65535-truncated", "valueLength 65535 with no value bytes: the limit is checked before availability.",
        [raw_frame(b"a.b", hmap=entry(b"k", b"", value_len=0xFFFF), entries=1)], R.HEADER_LIMIT_EXCEEDED)
    add("key-truncated", "keyLength 5 but the map ends after 2 key bytes.",
        [raw_frame(b"a.b", hmap=b"\x05ab", entries=1)], R.HEADER_MAP_INVALID)
    add("value-length-missing", "Key complete, but only 1 of the 2 valueLength bytes is in the map.",
        [raw_frame(b"a.b", hmap=b"\x01k\x00", entries=1, payload=b"\x01v")], R.HEADER_MAP_INVALID)
    add("value-truncated", "valueLength 4 but only 2 value bytes are in the map (the payload does not count).",
        [raw_frame(b"a.b", hmap=entry(b"k", b"ab", value_len=4), entries=1, payload=b"cd")],
        R.HEADER_MAP_INVALID)
    add("header-count-exceeds-entries", "headerCount 2 but the map holds one entry.",
        [raw_frame(b"a.b", hmap=entry(b"k", b"v"), entries=2)], R.HEADER_MAP_INVALID)
    add("trailing-bytes-in-map", "One entry plus 2 unused bytes inside headersLength.",
        [raw_frame(b"a.b", hmap=entry(b"k", b"v") + b"\x00\x00", entries=1)], R.HEADER_MAP_INVALID)
    add("map-bytes-with-zero-count", "headerCount 0 with a 5-byte map.",
        [raw_frame(b"a.b", hmap=entry(b"k", b"v"), entries=0)], R.HEADER_MAP_INVALID)
    add("duplicate-key", "The same key twice.",
        [raw_frame(b"a.b", hmap=entry(b"k", b"1") + entry(b"k", b"2"), entries=2)], R.HEADER_MAP_INVALID)
    add("key-bad-utf8", "Header key with invalid UTF-8 (lone continuation byte 80).",
        [raw_frame(b"a.b", hmap=entry(b"k\x80", b"v"), entries=1)], R.INVALID_UTF8)
    add("value-bad-utf8", "Header value with invalid UTF-8 (overlong c1 bf).",
        [raw_frame(b"a.b", hmap=entry(b"k", b"\xc1\xbf"), entries=1)], R.INVALID_UTF8)
    add("value-surrogate", "Header value containing an encoded surrogate (ed b0 80).",
        [raw_frame(b"a.b", hmap=entry(b"trace", b"x\xed\xb0\x80"), entries=1)], R.INVALID_UTF8)
    add("key-contains-nul", "Header key 'a<NUL>b'.",
        [raw_frame(b"a.b", hmap=entry(b"a\x00b", b"v"), entries=1)], R.HEADER_MAP_INVALID)
    add("key-nul-before-value-utf8", "Key contains NUL and value is bad UTF-8: the key check comes first.",
        [raw_frame(b"a.b", hmap=entry(b"\x00", b"\xff"), entries=1)], R.HEADER_MAP_INVALID)
    add("value-utf8-before-duplicate", "Second entry repeats the key AND has a bad value: UTF-8 is checked before duplicates.",
        [raw_frame(b"a.b", hmap=entry(b"k", b"1") + entry(b"k", b"\xff"), entries=2)], R.INVALID_UTF8)
    add("entry-order-first-error-wins", "Entry 0 has an empty key, entry 1 a 65-byte key: entries are walked in order.",
        [raw_frame(b"a.b", hmap=entry(b"", b"") + entry(b"K" * 65, b""), entries=2)], R.HEADER_MAP_INVALID)

    # 12 payloadTooLarge
    add("payload-over-max", "Payload of 17 bytes with maxPayload 16.",
        [raw_frame(b"limits.payload", payload=b"0123456789abcdefg")], R.PAYLOAD_TOO_LARGE, max_payload=16)
    add("payload-over-max-zero", "Payload of 1 byte with maxPayload 0.",
        [raw_frame(b"limits.zero", payload=b"\x00")], R.PAYLOAD_TOO_LARGE, max_payload=0)
    add("map-error-before-payload-size", "Oversized payload AND a duplicate key: the header map is checked first.",
        [raw_frame(b"a.b", hmap=entry(b"k", b"1") + entry(b"k", b"2"), entries=2, payload=b"x" * 32)],
        R.HEADER_MAP_INVALID, max_payload=16)
    return out


# --------------------------------------------------------------------------
# Batch vectors (version 2, NBP-1 section 2.3)

def raw_batch(name: bytes, records: list, *, version=2, flags=0, name_len=None, count=None,
              reserved=0, reserved2=0, publisher_id=PID, trailing=b"") -> bytes:
    """name | 0x00 | batch header | records | trailing, every field overridable."""
    header = struct.pack("!BBBBHHQ", version, flags, (len(name) if name_len is None else name_len) & 0xFF,
                         reserved, len(records) if count is None else count, reserved2, publisher_id)
    return name + b"\x00" + header + b"".join(records) + trailing


def raw_record(*, flags=0, content_type=0, header_count=None, headers_len=None, payload_len=None,
               sequence=1, timestamp=TS, hmap=b"", entries=0, payload=b"", reserved=0) -> bytes:
    """One batch record, every field overridable."""
    fixed = struct.pack("!BBBBHIQQ", flags, content_type, entries if header_count is None else header_count,
                        reserved, len(hmap) if headers_len is None else headers_len,
                        len(payload) if payload_len is None else payload_len, sequence, timestamp)
    return fixed + hmap + payload


def batch_valid_vectors() -> list:
    out = []

    def one(name, payload=b"", headers=(), content_type=0, sequence=1, timestamp=TS, flags=0):
        return {"name": name, "version": 2, "flags": flags, "contentType": content_type,
                "sequence": str(sequence), "publisherId": str(PID), "timestamp": str(timestamp),
                "headers": [[k, v] for k, v in headers], "payloadHex": bytes(payload).hex()}

    def add(vid, description, name, records, max_payload=None):
        """records: (payload, headers, content_type, sequence, timestamp) per notification."""
        frames = [nbp.encode(name, p, h, sequence=s, publisher_id=PID, timestamp_ns=t, content_type=c,
                             max_payload=None) for p, h, c, s, t in records]
        v = {"id": vid, "description": description, "frames": [nbp.encode_batch(frames).hex()]}
        if max_payload is not None:
            v["maxPayload"] = max_payload
        v["expect"] = "valid"
        v["canonical"] = True
        v["decoded"] = [one(name, p, h, c, s, t) for p, h, c, s, t in records]
        out.append(v)

    add("batch-two", "Two notifications of orders.created in one batch frame: sequences 1 and 2, "
        "each with its own time, header and payload.",
        "orders.created", [(b'{"id":42}', [("trace", "abc")], 2, 1, TS),
                           (b'{"id":43}', [("trace", "abd")], 2, 2, TS + 1000)])
    add("batch-one-record", "A batch of one record is valid (a producer normally sends a version 1 frame instead).",
        "a", [(b"x", [], 0, 9, TS)])
    add("batch-mixed-records", "Records of one batch may differ in content type, headers (count and order) and payload; "
        "an empty payload and an empty header map are fine.",
        "chat.message.posted", [(b"hello", [("user", "ada"), ("room", "general")], 1, 7, TS),
                                (b"", [], 0, 8, TS + 1),
                                (bytes([0xFF, 0x00, 0x80]), [("k", "")], 200, 9, TS + 2)])
    add("batch-sequence-gap", "Sequences 5 and 7: a gap inside a batch is not a reason to reject; a receiver that "
        "tracks the stream counts 1 notification lost between them.",
        "x.y", [(b"a", [], 0, 5, TS), (b"b", [], 0, 7, TS)])
    add("batch-name-like-control", "First token _nbusx, not _nbus: an ordinary name, so an ordinary batch (B0 "
        "compares the whole first token).", "_nbusx.y", [(b"1", [], 0, 1, TS), (b"2", [], 0, 2, TS)])
    add("batch-payload-at-max-per-record", "maxPayload 16 applies to each record: two 16-byte payloads (32 in all) pass.",
        "limits.payload", [(b"0123456789abcdef", [], 0, 1, TS), (b"fedcba9876543210", [], 0, 2, TS)], max_payload=16)
    # Non-canonical: batch flags and reserved bytes set, record flags and reserved set; receivers ignore them.
    frame = raw_batch(b"flags.set", [raw_record(flags=0xA5, reserved=0x5A, payload=b"[]", content_type=2)],
                      flags=0xFF, reserved=0xFF, reserved2=0xFFFF)
    out.append({"id": "batch-nonzero-flags-reserved",
                "description": "Batch flags, both batch reserved fields and the record's reserved byte set: ignored; "
                               "the record's flags (0xa5) are reported.",
                "frames": [frame.hex()], "expect": "valid", "canonical": False,
                "decoded": [dict(one("flags.set", b"[]", (), 2, 1, TS), flags=0xA5)]})
    return out


def batch_invalid_vectors() -> list:
    out = []

    def add(vid, description, frames, reason, max_payload=None, records=None):
        v = {"id": vid, "description": description, "frames": [f.hex() for f in frames]}
        if max_payload is not None:
            v["maxPayload"] = max_payload
        v["expect"] = "reject"
        v["reason"] = reason
        v["records"] = records
        out.append(v)

    R = nbp
    rec = raw_record(payload=b"p")
    good = raw_batch(b"a.b", [rec, raw_record(sequence=2, payload=b"q")])
    add("batch-two-frames", "A valid batch followed by an empty second frame.", [good, b""], R.WRONG_FRAME_COUNT)
    add("batch-invalid-name", "Batch frames are named like every frame: a space is invalidName.",
        [raw_batch(b"a b", [rec])], R.INVALID_NAME)
    add("batch-version-only", "Version byte 2 and nothing else.", [b"a.b\x00\x02"], R.TRUNCATED_HEADER)
    add("batch-header-15-bytes", "Only 15 of the 16 batch-header bytes.",
        [raw_batch(b"a.b", [])[:-1]], R.TRUNCATED_HEADER)
    add("batch-name-length-mismatch", "nameLength says 4, the name has 3 bytes. The header holds a valid "
        "recordCount (1), so the count is reported although step B2 rejected the frame before B3 ran.",
        [raw_batch(b"a.b", [rec], name_len=4)], R.NAME_LENGTH_MISMATCH, records=1)
    add("batch-name-length-mismatch-zero-records", "nameLength says 4 AND recordCount is 0: B2 runs first, so "
        "nameLengthMismatch; the count is not valid, so none is reported.",
        [raw_batch(b"a.b", [], name_len=4)], R.NAME_LENGTH_MISMATCH)
    add("batch-control-name-eos", "An end-of-stream name in a batch (step B0): control messages are never batched, "
        "so this is no end-of-stream record; a receiver acts on nothing in it and counts it batchInvalid.",
        [raw_batch(b"_nbus.eos.00000000000000ff", [raw_record(payload=b"\x03a.b" + struct.pack("!Q", 9))])],
        R.BATCH_INVALID, records=1)
    add("batch-control-name-unknown", "A control name this receiver does not know, in a batch: batchInvalid (B0), "
        "not dropped uncounted.", [raw_batch(b"_nbus.foo", [rec, rec])], R.BATCH_INVALID, records=2)
    add("batch-control-name-bare", "The bare name _nbus is a control name too (B0).",
        [raw_batch(b"_nbus", [rec])], R.BATCH_INVALID, records=1)
    add("batch-control-name-before-header", "B0 runs before B1: a control name with a batch header cut short is "
        "batchInvalid, and no count is reported.", [b"_nbus.x\x00\x02\x00"], R.BATCH_INVALID)
    add("batch-nbus-not-first-token", "_nbus as a later token is an ordinary name: B0 passes, and the wrong "
        "nameLength is what rejects this batch (B2).", [raw_batch(b"a._nbus", [rec], name_len=9)],
        R.NAME_LENGTH_MISMATCH, records=1)
    add("batch-zero-records", "recordCount 0.", [raw_batch(b"a.b", [])], R.BATCH_INVALID)
    add("batch-1025-records", "recordCount 1025 (the records are there): over the limit of 1024.",
        [raw_batch(b"a.b", [raw_record(sequence=i + 1) for i in range(1025)])], R.BATCH_INVALID)
    add("batch-fewer-records-than-count", "recordCount 3, two records: the third record's fixed part is missing. "
        "The frame holds room for two records, so two are reported (a lying count inflates nothing).",
        [raw_batch(b"a.b", [rec, rec], count=3)], R.TRUNCATED_HEADER, records=2)
    add("batch-count-lies", "recordCount 1024, one record: 1 reported, as many as the bytes can hold.",
        [raw_batch(b"a.b", [rec], count=1024)], R.TRUNCATED_HEADER, records=1)
    add("batch-record-cut-short", "The second record's fixed part has 25 of 26 bytes.",
        [raw_batch(b"a.b", [rec, raw_record()[:-1]])], R.TRUNCATED_HEADER, records=2)
    add("batch-record-33-headers", "A record with headerCount 33.",
        [raw_batch(b"a.b", [rec, raw_record(header_count=33)])], R.HEADER_LIMIT_EXCEEDED, records=2)
    add("batch-record-headers-length-4097", "A record with headersLength 4097, the frame short: the limit is checked first.",
        [raw_batch(b"a.b", [raw_record(headers_len=4097)])], R.HEADER_LIMIT_EXCEEDED, records=1)
    add("batch-record-map-past-frame", "A record's headersLength 20 with 7 bytes left in the frame.",
        [raw_batch(b"a.b", [raw_record(headers_len=20, hmap=entry(b"k", b"abc"), entries=1)])],
        R.TRUNCATED_HEADER, records=1)
    add("batch-record-duplicate-key", "The second record repeats a header key: the whole batch is rejected.",
        [raw_batch(b"a.b", [rec, raw_record(hmap=entry(b"k", b"1") + entry(b"k", b"2"), entries=2)])],
        R.HEADER_MAP_INVALID, records=2)
    add("batch-record-value-bad-utf8", "A record's header value is not UTF-8.",
        [raw_batch(b"a.b", [raw_record(hmap=entry(b"k", b"\xff"), entries=1), rec])], R.INVALID_UTF8, records=2)
    add("batch-record-payload-over-max", "The second record's payload is 17 bytes with maxPayload 16.",
        [raw_batch(b"a.b", [rec, raw_record(payload=b"0123456789abcdefg")])], R.PAYLOAD_TOO_LARGE,
        max_payload=16, records=2)
    add("batch-record-payload-length-huge", "payloadLength 2^32-1 with 1 byte there: over maxPayload, checked "
        "before availability.", [raw_batch(b"a.b", [raw_record(payload_len=0xFFFFFFFF, payload=b"p")])],
        R.PAYLOAD_TOO_LARGE, records=1)
    add("batch-record-payload-past-frame", "payloadLength 5 with 1 byte left in the frame.",
        [raw_batch(b"a.b", [raw_record(payload_len=5, payload=b"p")])], R.TRUNCATED_HEADER, records=1)
    add("batch-trailing-bytes", "Two bytes after the last record (B5).",
        [raw_batch(b"a.b", [rec], trailing=b"\x00\x00")], R.BATCH_INVALID, records=1)
    add("batch-more-records-than-count", "recordCount 1, two records: the second is trailing bytes.",
        [raw_batch(b"a.b", [rec, rec], count=1)], R.BATCH_INVALID, records=1)
    add("batch-map-error-before-payload-size", "A duplicate key AND an oversized payload in one record: "
        "the header map is checked first.",
        [raw_batch(b"a.b", [raw_record(hmap=entry(b"k", b"1") + entry(b"k", b"2"), entries=2, payload=b"x" * 32)])],
        R.HEADER_MAP_INVALID, max_payload=16, records=1)
    return out


# --------------------------------------------------------------------------

def render(vectors: list) -> str:
    return json.dumps({"protocol": nbp.PROTOCOL, "vectors": vectors}, indent=2, ensure_ascii=False) + "\n"


def self_check(valid: list, invalid: list, batch_valid: list, batch_invalid: list) -> None:
    """Sanity checks at generation time (the real checks are in test_nbp.py)."""
    ids = [v["id"] for v in valid + invalid + batch_valid + batch_invalid]
    assert len(ids) == len(set(ids)), "duplicate vector ids"
    for v in valid:
        n = nbp.decode([bytes.fromhex(f) for f in v["frames"]], v.get("maxPayload", DEFAULT_MAX))
        assert n.name == v["decoded"]["name"], v["id"]
    for v in batch_valid:
        ns = nbp.decode_all([bytes.fromhex(f) for f in v["frames"]], v.get("maxPayload", DEFAULT_MAX))
        assert [n.sequence for n in ns] == [int(d["sequence"]) for d in v["decoded"]], v["id"]
    reasons = set()
    for v in invalid + batch_invalid:
        try:
            nbp.decode_all([bytes.fromhex(f) for f in v["frames"]], v.get("maxPayload", DEFAULT_MAX))
        except nbp.Rejected as e:
            assert e.reason == v["reason"], (v["id"], e.reason, v["reason"])
            assert e.records == v.get("records"), (v["id"], e.records, v.get("records"))
            reasons.add(e.reason)
        else:
            raise AssertionError(f"{v['id']} decoded")
    missing = set(nbp.REASONS) - reasons
    assert not missing, f"reasons without a vector: {missing}"


def main(argv: list) -> int:
    valid, invalid = valid_vectors(), invalid_vectors()
    batch_valid, batch_invalid = batch_valid_vectors(), batch_invalid_vectors()
    self_check(valid, invalid, batch_valid, batch_invalid)
    files = {VALID_PATH: render(valid), INVALID_PATH: render(invalid),
             BATCH_VALID_PATH: render(batch_valid), BATCH_INVALID_PATH: render(batch_invalid)}
    if "--check" in argv:
        stale = []
        for path, text in files.items():
            try:
                with open(path, encoding="utf-8") as f:
                    if f.read() != text:
                        stale.append(path)
            except FileNotFoundError:
                stale.append(path)
        for p in stale:
            print(f"out of date: {p}", file=sys.stderr)
        return 1 if stale else 0
    os.makedirs(VECTOR_DIR, exist_ok=True)
    for path, text in files.items():
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    print(f"wrote {len(valid)} valid, {len(invalid)} invalid, {len(batch_valid)} batch-valid and "
          f"{len(batch_invalid)} batch-invalid vectors to {VECTOR_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
