"""The listing public_api.py makes from symbol graphs: one line per declaration and conformance,
sorted, only the products' modules, and a check that fails on a difference."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import public_api  # noqa: E402


def symbol(precise, path, kind, declaration, access="public"):
    return {
        "identifier": {"precise": precise, "interfaceLanguage": "swift"},
        "pathComponents": path,
        "kind": {"identifier": f"swift.{kind}", "displayName": kind},
        "accessLevel": access,
        "declarationFragments": [{"kind": "text", "spelling": part} for part in declaration],
    }


class ListingTests(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        graphs = {
            "Core": {
                "symbols": [
                    symbol("s:4Core5ErrorV", ["Failure"], "struct", ["struct ", "Failure"]),
                    symbol("s:4Core5ErrorV6closedvpZ", ["Failure", "closed"], "type.property",
                           ["static let ", "closed", ": ", "Failure"]),
                    symbol("s:4Core6hiddenV", ["Hidden"], "struct", ["struct Hidden"], access="internal"),
                ],
                "relationships": [
                    {"kind": "conformsTo", "source": "s:4Core5ErrorV", "target": "s:s5ErrorP",
                     "targetFallback": "Swift.Error"},
                    {"kind": "memberOf", "source": "s:4Core5ErrorV6closedvpZ", "target": "s:4Core5ErrorV"},
                ],
            },
            # Extensions a module declares on another module's types.
            "Services@Core": {
                "symbols": [
                    symbol("s:4Core5ErrorV8Services4textSSvp", ["Failure", "text"], "property",
                           ["var ", "text", ":  String"]),
                ],
                "relationships": [
                    {"kind": "conformsTo", "source": "s:4Core5ErrorV", "target": "s:10Foundation14LocalizedErrorP",
                     "targetFallback": "Foundation.LocalizedError"},
                ],
            },
            "Bench": {"symbols": [symbol("s:5Bench3RunV", ["Run"], "struct", ["struct Run"])], "relationships": []},
        }
        for name, graph in graphs.items():
            with open(os.path.join(self.folder.name, f"{name}.symbols.json"), "w", encoding="utf-8") as handle:
                json.dump({"module": {"name": name.split("@")[0]}, **graph}, handle)

    def tearDown(self):
        self.folder.cleanup()

    def test_lines_are_sorted_public_and_only_the_products_modules(self):
        lines = public_api.listing(self.folder.name, ["Core", "Services"])
        self.assertEqual(lines, [
            "Core conformance Failure: Swift.Error",
            "Core struct Failure: struct Failure",
            "Core type.property Failure.closed: static let closed: Failure",
            "Services conformance Failure: Foundation.LocalizedError",
            "Services property Failure.text: var text: String",
        ])

    def test_the_same_graphs_give_the_same_listing(self):
        first = public_api.listing(self.folder.name, ["Core", "Services"])
        self.assertEqual(first, public_api.listing(self.folder.name, ["Services", "Core"]))


class CheckTests(unittest.TestCase):
    @unittest.skipIf(shutil.which(os.environ.get("SWIFT", "swift")) is None, "swift is not on PATH")
    def test_a_difference_fails_with_the_diff(self):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "public_api.py")
        with tempfile.TemporaryDirectory() as package:
            with open(os.path.join(package, "Package.swift"), "w", encoding="utf-8") as handle:
                handle.write("// swift-tools-version:6.0\nimport PackageDescription\n"
                             "let package = Package(name: \"Empty\", products: [], targets: [])\n")
            graphs = os.path.join(package, ".build", "public-api", "symbolgraph")
            os.makedirs(graphs)
            recorded = os.path.join(package, "api.txt")
            with open(recorded, "w", encoding="utf-8") as handle:
                handle.write(public_api.HEADER + "Gone struct Old: struct Old\n")
            result = subprocess.run(
                [sys.executable, script, "--package-path", package, "--skip-dump", "--check", recorded],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
            self.assertIn("-Gone struct Old: struct Old", result.stdout)
            self.assertIn("make api", result.stderr)


if __name__ == "__main__":
    unittest.main()
