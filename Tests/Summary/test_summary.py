#!/usr/bin/env python3
"""One summary for `make test`: reads the log of each step (.build/test-logs/STEP.log, and
STEP.status with its exit status) and prints, per step and in all, how many tests ran, passed,
failed and were skipped, which were skipped and why, and which failed.

It reads what the runners print: Swift Testing's per-test lines (`✔ Test "x" passed after`,
`✘ Test "x" failed after`, `➜ Test "x" skipped: "why"`, `➜ Test "x" was cancelled after ...:
"why"`, `━ Test "x" passed ... with 1 known issue`) and Python unittest's verbose lines
(`test_x (m.C.test_x) ... ok|FAIL|ERROR|skipped 'why'`) with its closing `Ran N tests`. A step
that exited non-zero without a runner's closing line (a build error, a crash) is reported as such:
its counts are then not the whole story.

The last line is `total: N passed, N failed, N skipped`. Exit status 1 when any test failed or any
step failed; 0 otherwise.

Usage: test_summary.py LOG_FOLDER STEP[=TITLE]...
"""

import os
import re
import sys

# The outcome follows the name, which may itself hold words like "skipped": each pattern is
# anchored on what only the runner writes after it (a duration, or the end of the line).
SWIFT_PASSED = re.compile(r'^[✔━] Test (?P<name>.+?)(?: with \d+ test cases?)? passed after [\d.]+ seconds?')
SWIFT_FAILED = re.compile(r'^✘ Test (?P<name>.+?)(?: with \d+ test cases?)? failed after [\d.]+ seconds?')
SWIFT_SKIPPED = re.compile(
    r'^➜ Test (?P<name>.+?)(?: skipped| was cancelled after [\d.]+ seconds?)(?:: "(?P<reason>.*)")?\.?$')
SWIFT_RUN = re.compile(r'^[✔✘] Test run with (\d+) tests? ')

PY_OUTCOME = re.compile(r'^(?P<name>.*?) \.\.\. (?P<what>ok|FAIL|ERROR|skipped|expected failure|unexpected success)(?P<rest>.*)$')
PY_RAN = re.compile(r'^Ran (\d+) tests? in ')
PY_CLOSING = re.compile(r'^(OK|FAILED)(?: \((.*)\))?$')


class Step:
    def __init__(self, name, title):
        self.name = name
        self.title = title
        self.passed = 0
        self.failed = []
        self.skipped = []  # (test, reason)
        self.runs = 0      # runner closing lines seen
        self.status = None
        # unittest's own closing counts (`Ran N tests`, `FAILED (failures=1, skipped=2)`): they
        # stand when a test's output split its "... ok" line and the per-test lines miss it.
        self.python_lines = {'passed': 0, 'failed': 0, 'skipped': 0}
        self.python_declared = {'ran': 0, 'failed': 0, 'skipped': 0}

    @property
    def ran(self):
        return self.passed_count + self.failed_count + self.skipped_count

    def _python_extra(self, key):
        """What unittest declared beyond what its per-test lines showed (never negative)."""
        if key == 'passed':
            declared = self.python_declared['ran'] - self.python_declared['failed'] - self.python_declared['skipped']
        else:
            declared = self.python_declared[key]
        return max(0, declared - self.python_lines[key])

    @property
    def passed_count(self):
        return self.passed + self._python_extra('passed')

    @property
    def failed_count(self):
        return len(self.failed) + self._python_extra('failed')

    @property
    def skipped_count(self):
        return len(self.skipped) + self._python_extra('skipped')


def parse(step, lines):
    """Counts the outcomes in `lines` into `step`."""
    python_test = None  # unittest's test id, when its docstring line carries the outcome
    for raw in lines:
        line = raw.rstrip('\n')
        if SWIFT_RUN.match(line):
            step.runs += 1
            continue
        match = SWIFT_PASSED.match(line)
        if match:
            step.passed += 1
            continue
        match = SWIFT_FAILED.match(line)
        if match:
            step.failed.append(match.group('name'))
            continue
        match = SWIFT_SKIPPED.match(line)
        if match:
            step.skipped.append((match.group('name'), match.group('reason') or 'no reason given'))
            continue
        match = PY_RAN.match(line)
        if match:
            step.runs += 1
            step.python_declared['ran'] += int(match.group(1))
            continue
        match = PY_CLOSING.match(line)
        if match and match.group(2) is not None:
            for part in match.group(2).split(','):
                key, _, value = part.strip().partition('=')
                if value.isdigit() and key in ('failures', 'errors', 'unexpected_successes'):
                    step.python_declared['failed'] += int(value)
                elif value.isdigit() and key == 'skipped':
                    step.python_declared['skipped'] += int(value)
            continue
        match = PY_OUTCOME.match(line)
        if match:
            name = match.group('name') or python_test or '?'
            if python_test and not re.match(r'^test\w* \(', name):
                name = f'{python_test}: {name}'
            what, rest = match.group('what'), match.group('rest').strip()
            if what in ('ok', 'expected failure'):
                step.passed += 1
                step.python_lines['passed'] += 1
            elif what == 'skipped':
                step.skipped.append((name, rest.strip("'\"") or 'no reason given'))
                step.python_lines['skipped'] += 1
            else:
                step.failed.append(name)
                step.python_lines['failed'] += 1
            python_test = None
            continue
        # unittest -v with a docstring: "test_x (m.C.test_x)" alone, the outcome on the next line.
        if re.match(r'^test\w* \([\w.]+\)$', line):
            python_test = line


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    folder = argv[1]
    steps = []
    for spec in argv[2:]:
        name, _, title = spec.partition('=')
        step = Step(name, title or name)
        path = os.path.join(folder, name + '.log')
        if os.path.exists(path):
            with open(path, encoding='utf-8', errors='replace') as log:
                parse(step, log)
        status_path = os.path.join(folder, name + '.status')
        if os.path.exists(status_path):
            with open(status_path) as status:
                text = status.read().strip()
                step.status = int(text) if text.lstrip('-').isdigit() else None
        steps.append(step)

    print()
    print('=== make test: summary (logs in %s/) ===' % folder)
    broken = False
    width = max(len(step.title) for step in steps) + 1
    for step in steps:
        line = '%-*s %5d ran, %5d passed, %3d failed, %3d skipped' % (
            width, step.title + ':', step.ran, step.passed_count, step.failed_count, step.skipped_count)
        if step.status is None:
            line += '  (did not run)'
            broken = True
        elif step.status != 0 and not step.failed_count:
            line += '  (exit status %d%s)' % (
                step.status, ', no test result' if step.runs == 0 else ', see its log')
            broken = True
        elif step.status != 0:
            line += '  (exit status %d)' % step.status
        print(line)
    skipped = [(step, test, reason) for step in steps for test, reason in step.skipped]
    if skipped:
        print('skipped, and why:')
        for step, test, reason in skipped:
            print('  [%s] %s: %s' % (step.title, test, reason))
    failed = [(step, test) for step in steps for test in step.failed]
    if failed:
        print('failed:')
        for step, test in failed:
            print('  [%s] %s' % (step.title, test))
    for step in steps:
        unnamed = step.failed_count - len(step.failed)
        if unnamed > 0:
            print('  [%s] %d more that unittest counted (see %s/%s.log)' % (step.title, unnamed, folder, step.name))
        if step.status not in (None, 0) and not step.failed_count:
            print('  [%s] exited %d without a failed test: a build error or a crash; see %s/%s.log'
                  % (step.title, step.status, folder, step.name))
    passed = sum(step.passed_count for step in steps)
    failures = sum(step.failed_count for step in steps)
    skips = sum(step.skipped_count for step in steps)
    print('ran %d tests' % sum(step.ran for step in steps))
    print('total: %d passed, %d failed, %d skipped' % (passed, failures, skips))
    return 1 if failures or broken or any(step.status not in (None, 0) for step in steps) else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
