"""Unit tests of the collector outputs the push benchmark reads (collector.py): the file
exporter's length-prefixed messages and the JSON requests' sample counts. No collector, no JVM."""
import os
import struct
import tempfile
import unittest

from bench.collector import proto_messages, request_summary


class ProtoMessages(unittest.TestCase):
    def write(self, data):
        fd, path = tempfile.mkstemp()
        os.write(fd, data)
        os.close(fd)
        self.addCleanup(os.unlink, path)
        return path

    def test_splits_length_prefixed_messages(self):
        path = self.write(struct.pack(">I", 3) + b"abc" + struct.pack(">I", 0) + struct.pack(">I", 2) + b"xy")
        self.assertEqual(proto_messages(path), [b"abc", b"", b"xy"])

    def test_a_message_past_the_end_is_refused(self):
        path = self.write(struct.pack(">I", 10) + b"abc")
        with self.assertRaises(SystemExit):
            proto_messages(path)


class RequestSummary(unittest.TestCase):
    def test_counts_samples_per_type_and_reads_indexed_attributes(self):
        req = {
            "dictionary": {"stringTable": ["", "cpu", "nanoseconds", "samples", "count", "service.name", "a"]},
            "resourceProfiles": [{
                "resource": {"attributes": [{"keyStrindex": 5, "value": {"stringValueStrindex": 6}}]},
                "scopeProfiles": [{"profiles": [
                    {"sampleType": {"typeStrindex": 1, "unitStrindex": 2},
                     "samples": [{"values": ["10000000"], "timestampsUnixNano": ["1"]},
                                 {"values": ["20000000"], "timestampsUnixNano": ["2"]}]},
                    # Values omitted: one occurrence per timestamp.
                    {"sampleType": {"typeStrindex": 3, "unitStrindex": 4},
                     "samples": [{"timestampsUnixNano": ["1", "2", "3"]}, {"values": ["5"]}]},
                ]}],
            }],
        }
        service, types, stamped = request_summary(req)
        self.assertEqual(service, "a")
        self.assertEqual(types, {"cpu/nanoseconds": (2, 30000000), "samples/count": (2, 8)})
        # Of the largest profile (the first, on a tie).
        self.assertEqual(stamped, 2)


if __name__ == "__main__":
    unittest.main()
