"""Tests for the NBP/1 reference codec and the test vectors.

Run either of:
    cd protocol/python && python3 -m unittest -v
    python3 -m unittest discover -s protocol/python -v      (from the repo root)
"""

from __future__ import annotations

import json
import os
import sys
import struct
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import make_vectors  # noqa: E402
import nbp  # noqa: E402

VECTOR_DIR = os.path.join(os.path.dirname(HERE), "vectors")
PID = 1311768467463790320
TS = 1700000000000000000


def load(name: str) -> dict:
    with open(os.path.join(VECTOR_DIR, name), encoding="utf-8") as f:
        return json.load(f)


def frames_of(v: dict) -> list:
    return [bytes.fromhex(h) for h in v["frames"]]


class VectorFileTests(unittest.TestCase):
    def test_files_shape(self):
        for fname, expect, minimum in (("valid.json", "valid", 14), ("invalid.json", "reject", 16)):
            doc = load(fname)
            self.assertEqual(doc["protocol"], "NBP/1")
            self.assertGreaterEqual(len(doc["vectors"]), minimum)
            for v in doc["vectors"]:
                self.assertEqual(v["expect"], expect, v["id"])
                for h in v["frames"]:
                    self.assertEqual(h, h.lower(), v["id"])
                    bytes.fromhex(h)

    def test_every_reason_covered(self):
        reasons = {v["reason"] for f in ("invalid.json", "batch-invalid.json") for v in load(f)["vectors"]}
        self.assertEqual(reasons, set(nbp.REASONS))

    def test_ids_unique(self):
        files = ("valid.json", "invalid.json", "batch-valid.json", "batch-invalid.json")
        ids = [v["id"] for f in files for v in load(f)["vectors"]]
        self.assertEqual(len(ids), len(set(ids)))

    def test_files_match_generator(self):
        """The committed JSON is exactly what make_vectors.py produces."""
        with open(make_vectors.VALID_PATH, encoding="utf-8") as f:
            self.assertEqual(f.read(), make_vectors.render(make_vectors.valid_vectors()))
        with open(make_vectors.INVALID_PATH, encoding="utf-8") as f:
            self.assertEqual(f.read(), make_vectors.render(make_vectors.invalid_vectors()))
        with open(make_vectors.BATCH_VALID_PATH, encoding="utf-8") as f:
            self.assertEqual(f.read(), make_vectors.render(make_vectors.batch_valid_vectors()))
        with open(make_vectors.BATCH_INVALID_PATH, encoding="utf-8") as f:
            self.assertEqual(f.read(), make_vectors.render(make_vectors.batch_invalid_vectors()))


class ValidVectorTests(unittest.TestCase):
    def test_valid_vectors(self):
        for v in load("valid.json")["vectors"]:
            with self.subTest(v["id"]):
                n = nbp.decode(frames_of(v), v.get("maxPayload", nbp.DEFAULT_MAX_PAYLOAD))
                d = v["decoded"]
                self.assertEqual(n.name, d["name"])
                self.assertEqual(n.version, d["version"])
                self.assertEqual(n.flags, d["flags"])
                self.assertEqual(n.content_type, d["contentType"])
                self.assertEqual(n.sequence, int(d["sequence"]))
                self.assertEqual(n.publisher_id, int(d["publisherId"]))
                self.assertEqual(n.timestamp, int(d["timestamp"]))
                self.assertEqual([list(h) for h in n.headers], d["headers"])
                self.assertEqual(n.payload.hex(), d["payloadHex"])
                self.assertIsInstance(v["canonical"], bool)

    def test_canonical_reencode(self):
        count = 0
        for v in load("valid.json")["vectors"]:
            if not v["canonical"]:
                continue
            count += 1
            with self.subTest(v["id"]):
                d = v["decoded"]
                frame = nbp.encode(
                    d["name"], bytes.fromhex(d["payloadHex"]), [tuple(h) for h in d["headers"]],
                    sequence=int(d["sequence"]), publisher_id=int(d["publisherId"]),
                    timestamp_ns=int(d["timestamp"]), content_type=d["contentType"],
                    flags=d["flags"], max_payload=None,
                )
                self.assertEqual(frame.hex(), v["frames"][0])
        self.assertGreater(count, 0)

    def test_noncanonical_flagged(self):
        for v in load("valid.json")["vectors"]:
            frame = bytes.fromhex(v["frames"][0])
            fixed = frame[frame.index(0) + 1:]
            nonzero = fixed[1] != 0 or fixed[7] != 0
            self.assertEqual(v["canonical"], not nonzero, v["id"])


class InvalidVectorTests(unittest.TestCase):
    def test_invalid_vectors(self):
        for v in load("invalid.json")["vectors"]:
            with self.subTest(v["id"]):
                with self.assertRaises(nbp.Rejected) as cm:
                    nbp.decode(frames_of(v), v.get("maxPayload", nbp.DEFAULT_MAX_PAYLOAD))
                self.assertEqual(cm.exception.reason, v["reason"])


class BatchVectorTests(unittest.TestCase):
    def test_valid_batches(self):
        vectors = load("batch-valid.json")["vectors"]
        self.assertGreaterEqual(len(vectors), 5)
        for v in vectors:
            with self.subTest(v["id"]):
                ns = nbp.decode_all(frames_of(v), v.get("maxPayload", nbp.DEFAULT_MAX_PAYLOAD))
                self.assertEqual(len(ns), len(v["decoded"]))
                for n, d in zip(ns, v["decoded"]):
                    self.assertEqual(n.name, d["name"])
                    self.assertEqual(n.version, d["version"])
                    self.assertEqual(n.flags, d["flags"])
                    self.assertEqual(n.content_type, d["contentType"])
                    self.assertEqual(n.sequence, int(d["sequence"]))
                    self.assertEqual(n.publisher_id, int(d["publisherId"]))
                    self.assertEqual(n.timestamp, int(d["timestamp"]))
                    self.assertEqual([list(h) for h in n.headers], d["headers"])
                    self.assertEqual(n.payload.hex(), d["payloadHex"])

    def test_canonical_batches_reencode(self):
        count = 0
        for v in load("batch-valid.json")["vectors"]:
            if not v["canonical"]:
                continue
            count += 1
            with self.subTest(v["id"]):
                frames = [nbp.encode(
                    d["name"], bytes.fromhex(d["payloadHex"]), [tuple(h) for h in d["headers"]],
                    sequence=int(d["sequence"]), publisher_id=int(d["publisherId"]),
                    timestamp_ns=int(d["timestamp"]), content_type=d["contentType"],
                    flags=d["flags"], max_payload=None) for d in v["decoded"]]
                self.assertEqual(nbp.encode_batch(frames).hex(), v["frames"][0])
        self.assertGreater(count, 3)

    def test_invalid_batches(self):
        for v in load("batch-invalid.json")["vectors"]:
            with self.subTest(v["id"]):
                with self.assertRaises(nbp.Rejected) as cm:
                    nbp.decode_all(frames_of(v), v.get("maxPayload", nbp.DEFAULT_MAX_PAYLOAD))
                self.assertEqual(cm.exception.reason, v["reason"])
                self.assertEqual(cm.exception.records, v["records"])

    def test_version_1_vectors_decode_all_the_same(self):
        """decode_all gives what decode gives for every version 1 vector."""
        for v in load("valid.json")["vectors"]:
            self.assertEqual(nbp.decode_all(frames_of(v), v.get("maxPayload", nbp.DEFAULT_MAX_PAYLOAD)),
                             (nbp.decode(frames_of(v), v.get("maxPayload", nbp.DEFAULT_MAX_PAYLOAD)),))
        for v in load("invalid.json")["vectors"]:
            with self.assertRaises(nbp.Rejected) as cm:
                nbp.decode_all(frames_of(v), v.get("maxPayload", nbp.DEFAULT_MAX_PAYLOAD))
            self.assertEqual(cm.exception.reason, v["reason"], v["id"])

    def test_old_decoder_counts_batch_as_unsupported_version(self):
        """A receiver written before batches (decode) sees unsupportedVersion, never a misread."""
        for v in load("batch-valid.json")["vectors"]:
            with self.assertRaises(nbp.Rejected) as cm:
                nbp.decode(frames_of(v))
            self.assertEqual(cm.exception.reason, nbp.UNSUPPORTED_VERSION, v["id"])

    def test_limit_1024_records(self):
        frames = [nbp.encode("limits.batch", b"", sequence=i + 1, publisher_id=7, timestamp_ns=0)
                  for i in range(1025)]
        self.assertEqual(len(nbp.decode_all([nbp.encode_batch(frames[:1024])])), 1024)
        with self.assertRaises(ValueError):
            nbp.encode_batch(frames)
        with self.assertRaises(ValueError):
            nbp.encode_batch([])

    def test_encoder_refuses_mixed_streams(self):
        a = nbp.encode("a", b"", sequence=1, publisher_id=7, timestamp_ns=0)
        b = nbp.encode("b", b"", sequence=1, publisher_id=7, timestamp_ns=0)
        other = nbp.encode("a", b"", sequence=2, publisher_id=8, timestamp_ns=0)
        for frames in ([a, b], [a, other]):
            with self.assertRaises(ValueError):
                nbp.encode_batch(frames)

    def test_every_prefix_of_a_batch_is_rejected(self):
        frame = bytes.fromhex(load("batch-valid.json")["vectors"][0]["frames"][0])
        for length in range(len(frame)):
            with self.assertRaises(nbp.Rejected):
                nbp.decode_all([frame[:length]])

    def test_declared_record_count(self):
        frame = bytes.fromhex(load("batch-valid.json")["vectors"][0]["frames"][0])
        self.assertEqual(nbp.declared_record_count(frame), 2)
        self.assertIsNone(nbp.declared_record_count(nbp.encode("a", b"", sequence=1, publisher_id=7, timestamp_ns=0)))

    def test_unmatched_notification_count(self):
        """Section 7.1, "MAY skip": a batch counts as its declared count when readable and valid, else 1."""
        frame = bytes.fromhex(load("batch-valid.json")["vectors"][0]["frames"][0])
        self.assertEqual(nbp.unmatched_notification_count(frame), 2)
        self.assertEqual(nbp.unmatched_notification_count(
            nbp.encode("a", b"", sequence=1, publisher_id=7, timestamp_ns=0)), 1)
        name_end = frame.index(b"\x00") + 1
        for count in (0, 1025, 0xFFFF):
            bad = frame[:name_end + 4] + count.to_bytes(2, "big") + frame[name_end + 6:]
            self.assertEqual(nbp.unmatched_notification_count(bad), 1, count)
        self.assertEqual(nbp.unmatched_notification_count(frame[:name_end + 15]), 1)

    def _batch_of_length(self, length, max_payload=nbp.DEFAULT_MAX_PAYLOAD):
        """A well-formed batch frame named a.b of exactly `length` bytes, records within max_payload."""
        header = 4 + nbp.BATCH_HEADER_SIZE
        records, left, seq = [], length - header, 1
        while left > 0:
            payload = min(max_payload, left - nbp.BATCH_RECORD_HEADER_SIZE)
            records.append(struct.pack("!BBBBHIQQ", 0, 0, 0, 0, 0, payload, seq, 0) + b"x" * payload)
            left -= nbp.BATCH_RECORD_HEADER_SIZE + payload
            seq += 1
        self.assertEqual(left, 0)
        frame = b"a.b\x00" + struct.pack("!BBBBHHQ", 2, 0, 3, 0, len(records), 0, 7) + b"".join(records)
        self.assertEqual(len(frame), length)
        return frame

    def test_batch_frame_bound(self):
        """B4: a batch frame over 4384 + max(maxPayload, 1 MiB) bytes is payloadTooLarge, its count reported."""
        self.assertEqual(nbp.MAX_BATCH_FRAME, 4384 + 1048576)
        self.assertEqual(nbp.batch_frame_limit(16), nbp.MAX_BATCH_FRAME)
        self.assertEqual(nbp.batch_frame_limit(2 << 20), 4384 + (2 << 20))
        for max_payload in (nbp.DEFAULT_MAX_PAYLOAD, 4000):
            at = self._batch_of_length(nbp.MAX_BATCH_FRAME, max_payload)
            self.assertEqual(sum(len(n.payload) for n in nbp.decode_all([at], max_payload)),
                             nbp.MAX_BATCH_FRAME - 20 - 26 * nbp.declared_record_count(at))
            over = self._batch_of_length(nbp.MAX_BATCH_FRAME + 1, max_payload)
            with self.assertRaises(nbp.Rejected) as cm:
                nbp.decode_all([over], max_payload)
            self.assertEqual(cm.exception.reason, nbp.PAYLOAD_TOO_LARGE)
            self.assertEqual(cm.exception.records, nbp.declared_record_count(over))
        # A receiver configured for larger payloads accepts larger batches.
        over = self._batch_of_length(nbp.MAX_BATCH_FRAME + 1)
        self.assertEqual(len(nbp.decode_all([over], 2 << 20)), nbp.declared_record_count(over))

    def test_encoder_keeps_producer_rules(self):
        """encode_batch refuses what 2.3 forbids a producer: control names, frames over MAX_BATCH_FRAME."""
        eos = nbp.encode("_nbus.eos.00000000000000ff", b"", sequence=1, publisher_id=7, timestamp_ns=0)
        with self.assertRaisesRegex(ValueError, "never batched"):
            nbp.encode_batch([eos])
        big = [nbp.encode("a.b", b"x" * 600_000, sequence=i + 1, publisher_id=7, timestamp_ns=0, max_payload=None)
               for i in range(2)]
        with self.assertRaisesRegex(ValueError, "over 1052960"):
            nbp.encode_batch(big)
        self.assertEqual(len(nbp.decode_all([nbp.encode_batch(big[:1])])), 1)


class HandCheckedFrames(unittest.TestCase):
    """Frames written out by hand from the offset table in NBP-1.md."""

    BASIC = (
        "6f72646572732e63726561746564"  # "orders.created" (14 bytes)
        "00"                            # name terminator
        "01"                            # +0  version 1
        "00"                            # +1  flags
        "02"                            # +2  contentType application/json
        "0e"                            # +3  nameLength 14
        "000b"                          # +4  headersLength 11
        "01"                            # +6  headerCount 1
        "00"                            # +7  reserved
        "0000000000000001"              # +8  sequence 1
        "123456789abcdef0"              # +16 publisherId 1311768467463790320
        "17979cfe362a0000"              # +24 timestamp 1700000000000000000
        "05" "7472616365"               # keyLength 5, "trace"
        "0003" "616263"                 # valueLength 3, "abc"
        "7b226964223a34327d"            # payload {"id":42}
    )

    CAFE = (
        "636166c3a92ee8aea2e58d95"      # "café.订单": c a f (c3 a9) . (e8 ae a2) (e5 8d 95)
        "00"
        "01" "00" "02" "0c"             # version, flags, JSON, nameLength 12
        "0000" "00" "00"                # no header map
        "0000000000000001" "123456789abcdef0" "17979cfe362a0000"
        "7b7d"                          # {}
    )

    def vector(self, vid):
        return next(v for v in load("valid.json")["vectors"] if v["id"] == vid)

    def test_basic_hex(self):
        self.assertEqual(self.vector("basic-json")["frames"], [self.BASIC])
        frame = nbp.encode("orders.created", b'{"id":42}', [("trace", "abc")], sequence=1,
                           publisher_id=PID, timestamp_ns=TS, content_type=2)
        self.assertEqual(frame.hex(), self.BASIC)
        self.assertEqual(len(frame), 67)

    def test_cafe_hex(self):
        self.assertEqual(self.vector("multibyte-utf8-name")["frames"], [self.CAFE])

    def test_spec_example_matches(self):
        """The annotated hex dump in NBP-1.md is this same frame."""
        with open(os.path.join(os.path.dirname(HERE), "NBP-1.md"), encoding="utf-8") as f:
            spec = f.read()
        start = spec.index("<!-- hex-example-begin -->")
        end = spec.index("<!-- hex-example-end -->")
        block = spec[start:end].splitlines()
        hexdigits = ""
        for line in block:
            parts = line.split()
            if len(parts) > 1 and len(parts[0]) == 4 and line.startswith(parts[0] + "  "):
                # "0010  00 02 0e ..." -- offset, then up to 16 hex bytes
                offset = int(parts[0], 16)
                self.assertEqual(offset * 2, len(hexdigits), line)
                hexdigits += "".join(parts[1:17])
        self.assertEqual(hexdigits, self.BASIC)


class DecodeDetails(unittest.TestCase):
    def test_accepts_bytearray_and_memoryview(self):
        frame = nbp.encode("a.b", b"x", sequence=1, publisher_id=1, timestamp_ns=0)
        self.assertEqual(nbp.decode([bytearray(frame)]).payload, b"x")
        self.assertEqual(nbp.decode([memoryview(frame)]).name, "a.b")

    def test_single_buffer_is_type_error(self):
        with self.assertRaises(TypeError):
            nbp.decode(b"a\x00")

    def test_header_dict(self):
        frame = nbp.encode("a", headers={"x": "1", "y": "2"}, sequence=1, publisher_id=1, timestamp_ns=0)
        self.assertEqual(nbp.decode([frame]).header_dict, {"x": "1", "y": "2"})

    def test_roundtrip_every_name_byte(self):
        allowed = bytes(b for b in range(0x21, 0x7F) if b not in b".*>")
        frame = nbp.encode(allowed.decode(), sequence=1, publisher_id=1, timestamp_ns=0)
        self.assertEqual(nbp.decode([frame]).name, allowed.decode())


class PatternTests(unittest.TestCase):
    TABLE = [
        # pattern, name, matches
        ("orders.created", "orders.created", True),
        ("orders.created", "orders.created.eu", False),
        ("orders.created", "orders", False),
        ("ab", "abc", False),
        ("ab", "ab", True),
        ("a.*", "a.b", True),
        ("a.*", "a", False),
        ("a.*", "a.b.c", False),
        ("a.>", "a", False),
        ("a.>", "a.b", True),
        ("a.>", "a.b.c", True),
        ("a.>", "ab.c", False),
        ("orders.*.eu", "orders.created.eu", True),
        ("orders.*.eu", "orders.created.us", False),
        ("orders.*.eu", "orders.eu", False),
        ("orders.*.eu", "orders.x.y.eu", False),
        ("*", "x", True),
        ("*", "x.y", False),
        (">", "x", True),
        (">", "x.y.z", True),
        ("*.x", "a.x", True),
        ("*.x", "x", False),
        ("*.*.>", "a.b", False),
        ("*.*.>", "a.b.c", True),
        ("a.*.>", "a.b.c.d", True),
        ("café.*", "café.订单", True),
        ("a.>", "a..b", False),   # invalid names never match
        ("a.*", "a.*", False),
    ]

    PREFIXES = [
        ("orders.created", b"orders.created\x00"),
        ("ab", b"ab\x00"),
        ("orders.*.eu", b"orders."),
        ("orders.>", b"orders."),
        ("a.b.*.c.>", b"a.b."),
        ("*.x", b""),
        ("*", b""),
        (">", b""),
        ("café.>", "café.".encode()),
    ]

    def test_matches(self):
        for pattern, name, expected in self.TABLE:
            with self.subTest(pattern=pattern, name=name):
                self.assertEqual(nbp.Pattern.compile(pattern).matches(name), expected)

    def test_prefixes(self):
        for pattern, prefix in self.PREFIXES:
            with self.subTest(pattern=pattern):
                self.assertEqual(nbp.Pattern.compile(pattern).prefix, prefix)

    def test_prefix_is_consistent_with_matching(self):
        """Whenever a pattern matches a name, the name's frame starts with the prefix."""
        for pattern, name, expected in self.TABLE:
            if not expected:
                continue
            frame = nbp.encode(name, sequence=1, publisher_id=1, timestamp_ns=0)
            self.assertTrue(frame.startswith(nbp.Pattern.compile(pattern).prefix), (pattern, name))

    def test_exact_prefix_cannot_match_longer_name(self):
        frame = nbp.encode("abc", sequence=1, publisher_id=1, timestamp_ns=0)
        self.assertFalse(frame.startswith(nbp.Pattern.compile("ab").prefix))

    def test_invalid_patterns(self):
        for bad in ["a*", "a.>.b", "a..b", "", ".a", "a.", "ord*ers", "a.b>", ">.a", "*>", "a b",
                    "a\x00", "a\x7f", "x" * 256, b"\xc0\xae"]:
            with self.subTest(pattern=bad):
                with self.assertRaises(ValueError):
                    nbp.Pattern.compile(bad)

    def test_valid_pattern_lengths(self):
        self.assertTrue(nbp.Pattern.compile("x" * 255).is_exact)
        self.assertEqual(nbp.Pattern.compile("x" * 255).prefix, b"x" * 255 + b"\x00")


class NameTests(unittest.TestCase):
    def test_valid(self):
        for name in ["a", "orders.created", "café.订单", "x" * 255, "a-b_c:d", "A.B.C"]:
            self.assertEqual(nbp.validate_name(name), name)
        self.assertEqual(nbp.validate_name(b"a.b"), "a.b")

    def test_invalid(self):
        for name in ["", "x" * 256, "a..b", ".a", "a.", "a b", "a\tb", "a\x00", "a\x7f",
                     "a.*", "a.>", "a*b", "é" * 128, b"\xff", b"\xed\xa0\x80", "\ud800"]:
            with self.subTest(name=name):
                with self.assertRaises(ValueError):
                    nbp.validate_name(name)


class EncodeErrorTests(unittest.TestCase):
    KW = dict(sequence=1, publisher_id=1, timestamp_ns=0)

    def check(self, fragment, *args, **kw):
        with self.assertRaises(ValueError) as cm:
            nbp.encode(*args, **{**self.KW, **kw})
        self.assertIn(fragment, str(cm.exception))

    def test_bad_names(self):
        self.check("empty name", "")
        self.check("longer than 255", "x" * 256)
        self.check("empty token", "a..b")
        self.check("forbidden byte 0x20", "a b")
        self.check("not allowed in a concrete name", "orders.*")
        self.check("not valid UTF-8", b"\xff")

    def test_header_limits(self):
        self.check("too many headers", "a", b"", [(f"k{i}", "") for i in range(33)])
        self.check("must be 1..64 bytes", "a", b"", [("K" * 65, "")])
        self.check("must be 1..64 bytes", "a", b"", [("", "v")])
        self.check("contains NUL", "a", b"", [("a\x00", "v")])
        self.check("1025 bytes > 1024", "a", b"", [("k", "v" * 1025)])
        self.check("duplicate header key", "a", b"", [("k", "1"), ("k", "2")])
        self.check("header map is 4100 bytes > 4096", "a", b"", [(f"h{i:02d}", "v" * 1019) for i in range(4)])
        self.check("not valid UTF-8", "a", b"", [("k", b"\xff")])

    def test_header_limits_ok_at_boundary(self):
        nbp.encode("a", b"", [(f"k{i:02d}", "") for i in range(32)], **self.KW)
        nbp.encode("a", b"", [("K" * 64, "v" * 1024)], **self.KW)

    def test_numeric_ranges(self):
        self.check("sequence must be in 1..", "a", sequence=0)
        self.check("sequence must be in 1..", "a", sequence=1 << 64)
        self.check("publisher_id must be in 1..", "a", publisher_id=0)
        self.check("timestamp_ns must be in 0..", "a", timestamp_ns=-1)
        self.check("content_type must be in 0..255", "a", content_type=256)
        self.check("flags must be in 0..255", "a", flags=-1)

    def test_payload_limit(self):
        self.check("payload is 1048577 bytes", "a", b"x" * (nbp.DEFAULT_MAX_PAYLOAD + 1))
        self.check("payload is 5 bytes > maximum 4", "a", b"12345", max_payload=4)
        self.assertTrue(nbp.encode("a", b"12345", max_payload=None, **self.KW))


class PublisherStateTests(unittest.TestCase):
    def test_sequences_per_name(self):
        p = nbp.PublisherState(publisher_id=42)
        seqs = [(nbp.decode([p.encode(n, timestamp_ns=1)]).sequence, n) for n in ["a", "b", "a", "a", "b"]]
        self.assertEqual(seqs, [(1, "a"), (1, "b"), (2, "a"), (3, "a"), (2, "b")])
        self.assertEqual(p.last_sequence("a"), 3)
        self.assertEqual(p.next_sequence("c"), 1)

    def test_failed_encode_consumes_nothing(self):
        p = nbp.PublisherState(publisher_id=42)
        p.encode("a")
        with self.assertRaises(ValueError):
            p.encode("a", headers=[("", "")])
        self.assertEqual(nbp.decode([p.encode("a")]).sequence, 2)

    def test_random_id_nonzero_and_fields(self):
        p = nbp.PublisherState()
        self.assertTrue(0 < p.publisher_id < 1 << 64)
        n = nbp.decode([p.encode("x.y", b"{}", content_type=2)])
        self.assertEqual((n.publisher_id, n.sequence, n.content_type), (p.publisher_id, 1, 2))
        self.assertGreater(n.timestamp, 1_600_000_000 * 10**9)
        with self.assertRaises(ValueError):
            nbp.PublisherState(publisher_id=0)


class SequenceTrackerTests(unittest.TestCase):
    def test_gaps(self):
        t = nbp.SequenceTracker()
        self.assertEqual(t.observe(1, "a", 5), 0)   # late join: no loss reported
        self.assertEqual(t.observe(1, "a", 6), 0)
        self.assertEqual(t.observe(1, "a", 9), 2)   # 7 and 8 lost
        self.assertEqual(t.observe(1, "b", 1), 0)   # independent stream
        self.assertEqual(t.observe(1, "a", 9), 0)   # duplicate
        self.assertEqual(t.observe(2, "a", 1), 0)   # restarted publisher: new id
        self.assertEqual(t.observe(1, "a", 10), 0)
        self.assertEqual((t.lost, t.regressions), (2, 1))
        t.forget(1)
        self.assertEqual(t.observe(1, "a", 20), 0)


class RequestReplyTests(unittest.TestCase):
    def test_inbox_name_and_headers(self):
        self.assertEqual(nbp.inbox_name(0xAB, 7), "_inbox.00000000000000ab.7")
        headers = nbp.request_headers("_inbox.00000000000000ab.7", [("reply-to", "old"), ("trace", "t")])
        self.assertEqual(headers, (("trace", "t"), ("reply-to", "_inbox.00000000000000ab.7")))
        with self.assertRaises(ValueError):
            nbp.request_headers("not a name")
        self.assertEqual(nbp.reply_headers(), (("status", "ok"),))
        self.assertEqual(nbp.reply_headers(error=True, headers=[("status", "ok")]), (("status", "error"),))

    def test_reply_to_of_a_decoded_request(self):
        frame = nbp.encode("math.double", b"21", nbp.request_headers("_inbox.00000000000000ab.7"),
                           sequence=1, publisher_id=1, timestamp_ns=1)
        self.assertEqual(nbp.reply_to(nbp.decode([frame])), "_inbox.00000000000000ab.7")
        plain = nbp.encode("math.double", b"21", [("reply-to", "bad name")], sequence=1, publisher_id=1, timestamp_ns=1)
        self.assertIsNone(nbp.reply_to(nbp.decode([plain])), "an invalid reply-to gets no reply")



class RetainedTests(unittest.TestCase):
    """Section 18: the two flag bits and a snapshot frame's entries."""

    def test_flags_and_snapshot_entries(self):
        kept = nbp.encode("prices.eur", b"1.08", sequence=7, publisher_id=5, timestamp_ns=1,
                          flags=nbp.FLAG_RETAIN | nbp.FLAG_RETAINED_COPY)
        live = nbp.decode([nbp.encode("prices.eur", b"1.09", sequence=8, publisher_id=5, timestamp_ns=2,
                                      flags=nbp.FLAG_RETAIN)])
        self.assertTrue(nbp.asks_to_retain(live))
        self.assertFalse(nbp.is_retained(live), "a live retained post is no retained copy")
        payload = struct.pack("!I", len(kept)) + kept
        reply = nbp.retained_reply_name(0xff, 3)
        self.assertEqual(reply, "_nbus.retained.00000000000000ff.3")
        frame = nbp.encode(reply, payload, (("final", "1"), ("count", "1")), sequence=1, publisher_id=9, timestamp_ns=3)
        entries = nbp.retained_snapshot_entries(nbp.decode([frame]))
        self.assertEqual(len(entries), 1)
        self.assertTrue(entries[0].is_retained and nbp.is_retained(entries[0]))
        self.assertEqual((entries[0].name, entries[0].sequence, entries[0].payload), ("prices.eur", 7, b"1.08"))
        cut = nbp.encode(reply, payload[:-1], sequence=2, publisher_id=9, timestamp_ns=3)
        with self.assertRaises(nbp.Rejected):
            nbp.retained_snapshot_entries(nbp.decode([cut]))
        self.assertEqual(nbp.retained_request_topic(0xff, 3, "prices.>"),
                         b"\x00nbus.retained.00000000000000ff.3.prices.>")


if __name__ == "__main__":
    unittest.main()
