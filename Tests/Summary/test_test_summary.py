"""Unit tests of test_summary.py, on logs in the shapes Swift Testing and unittest print them
(copied from real runs: Swift Testing 6.3, Python 3.11)."""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(__file__))
import test_summary  # noqa: E402

SWIFT_LOG = '''\
◇ Test run started.
↳ Testing Library Version: 6.3.1 (937120cbc281cf2)
◇ Suite "A suite" started.
➜ Test "skipped one" skipped: "needs root"
➜ Test "disabled one" skipped: "not today"
◇ Test case passing 1 argument i → 3 to "param" started.
✘ Test "param" recorded an issue with 1 argument i → 3 at T.swift:8:57: Expectation failed: (i → 3) < 3
✘ Test "failing one" recorded an issue at T.swift:6:35: Expectation failed: 1 == 2
➜ Test "skip inside" was cancelled after 0.002 seconds: "multi-host test: not root"
✘ Test "param" with 3 test cases failed after 0.003 seconds with 1 issue.
✘ Test "failing one" failed after 0.003 seconds with 1 issue.
✔ Test "passing one" passed after 0.002 seconds.
✔ Test "--lines: a line over the maximum payload is skipped and counted, exit 2" passed after 17.183 seconds.
➜ Test "nothing skipped: a name that says skipped" skipped: "needs: root"
✔ Test plainName() passed after 0.002 seconds.
━ Test "known issue one" passed after 0.003 seconds with 1 known issue.
✘ Suite "A suite" failed after 0.003 seconds with 3 issues (including 1 known issue).
✘ Test run with 10 tests in 1 suite failed after 0.003 seconds with 3 issues (including 1 known issue).
'''

PYTHON_LOG = '''\
test_decode (test_codec.CodecTests.test_decode) ... ok
test_pyzmq (test_conformance.ConformanceTests.test_pyzmq) ... skipped 'pyzmq is not installed'
test_broken (test_codec.CodecTests.test_broken) ... FAIL
test_doc (test_codec.CodecTests.test_doc)
A test with a docstring ... ok
test_noisy (test_codec.CodecTests.test_noisy) ... a child's line got in the way
ok

----------------------------------------------------------------------
Ran 5 tests in 0.100s

FAILED (failures=1, skipped=1)
'''


class SummaryTests(unittest.TestCase):
    def run_summary(self, logs, statuses):
        with tempfile.TemporaryDirectory() as folder:
            for name, text in logs.items():
                with open(os.path.join(folder, name + '.log'), 'w', encoding='utf-8') as log:
                    log.write(text)
            for name, status in statuses.items():
                with open(os.path.join(folder, name + '.status'), 'w') as file:
                    file.write('%d\n' % status)
            output = io.StringIO()
            with redirect_stdout(output):
                code = test_summary.main(['test_summary.py', folder] + ['%s=%s tests' % (n, n) for n in logs])
            return code, output.getvalue()

    def test_swift_counts_and_reasons(self):
        code, text = self.run_summary({'swift': SWIFT_LOG}, {'swift': 1})
        self.assertEqual(code, 1)
        self.assertIn('swift tests:', text)
        self.assertIn('10 ran,     4 passed,   2 failed,   4 skipped', text)
        self.assertIn('[swift tests] "skipped one": needs root', text)
        self.assertIn('[swift tests] "skip inside": multi-host test: not root', text)
        self.assertIn('[swift tests] "param"', text)
        self.assertNotIn('run with', text.split('failed:')[1])
        self.assertIn('[swift tests] "nothing skipped: a name that says skipped": needs: root', text)
        self.assertTrue(text.rstrip().endswith('total: 4 passed, 2 failed, 4 skipped'), text)

    def test_python_counts_even_when_a_line_is_split(self):
        code, text = self.run_summary({'python': PYTHON_LOG}, {'python': 1})
        self.assertEqual(code, 1)
        # The noisy test's "ok" is on a line of its own: unittest's own counts stand.
        self.assertIn('5 ran,     3 passed,   1 failed,   1 skipped', text)
        self.assertIn("[python tests] test_pyzmq (test_conformance.ConformanceTests.test_pyzmq): pyzmq is not installed", text)
        self.assertIn('[python tests] test_broken (test_codec.CodecTests.test_broken)', text)

    def test_all_passing_exits_zero(self):
        log = '✔ Test "a" passed after 0.1 seconds.\n✔ Test run with 1 test in 1 suite passed after 0.1 seconds.\n'
        code, text = self.run_summary({'swift': log}, {'swift': 0})
        self.assertEqual(code, 0, text)
        self.assertTrue(text.rstrip().endswith('total: 1 passed, 0 failed, 0 skipped'), text)

    def test_a_step_that_failed_without_results_fails_the_summary(self):
        code, text = self.run_summary({'swift': 'error: compile command failed\n'}, {'swift': 1})
        self.assertEqual(code, 1)
        self.assertIn('exit status 1, no test result', text)
        self.assertIn('a build error or a crash', text)

    def test_a_step_that_did_not_run_fails_the_summary(self):
        code, text = self.run_summary({'swift': ''}, {})
        self.assertEqual(code, 1)
        self.assertIn('(did not run)', text)


if __name__ == '__main__':
    unittest.main()
