#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise a gpumig test run.

Reads RESULTS/checks.tsv (one line per check: name, status, seconds, detail)
and every KTAP file under RESULTS/ (KUnit debugfs results, and the VM test
scripts' own KTAP), prints every failure and the closing line
"N passed, N failed[, N skipped]".  Exits 1 on any failure or when no test
ran at all.
"""
import os
import re
import sys

RESULT = re.compile(r'^(\s*)(not ok|ok) (\d+)(?: -)? ?([^#]*?)\s*(?:#\s*(SKIP|TODO)\b(.*))?$')
PLAN = re.compile(r'^(\s*)1\.\.(\d+)\s*$')
SUBTEST = re.compile(r'^(\s*)# Subtest: (.*)$')


DIAG_LINES = 4
DIAG_WIDTH = 400


def parse_ktap(path, diags=None):
    """Return a list of (name, status), one per test case.

    With @diags (a dict), each failed case's diagnostics (the lines just
    before its result, as KTAP puts them; the first DIAG_LINES, each
    cut at DIAG_WIDTH) are stored under its name: a CI log that keeps only
    the summary still says why.

    A suite starts at "# Subtest:" (outside any suite); its cases are the
    result lines at the suite's indentation.  A parameterised case's own
    results (one level deeper) count one each, named "case: parameter",
    in place of the case's summary line; anything deeper is folded in.
    A result line further out closes the suite.  A suite whose plan
    promises more cases than it reported (a crash, a hang) gets the
    missing ones counted as failed.
    """
    cases = []
    suite, plan, seen, depth = None, 0, 0, 0
    params = []
    recent = []

    def close():
        nonlocal suite
        if suite is not None and seen < plan:
            cases.extend((f'{suite}: case {i + 1} (missing)', 'fail')
                         for i in range(seen, plan))
        suite = None

    def status_of(m):
        if m.group(5) == 'SKIP':
            return 'skip'
        return 'pass' if m.group(2) == 'ok' else 'fail'

    with open(path, errors='replace') as f:
        lines = [re.sub(r'^\[[ \d.]+\] ', '', l.rstrip('\n')) for l in f]
    for line in lines:
        m = SUBTEST.match(line)
        if m and suite is None:
            suite, depth, plan, seen = m.group(2).strip(), len(m.group(1)), 0, 0
            params = []
            continue
        if suite is None:
            continue
        m = PLAN.match(line)
        if m and len(m.group(1)) == depth:
            plan = max(plan, int(m.group(2)))
            continue
        m = RESULT.match(line)
        if not m:
            d = line.strip()
            if d and not d.startswith('# Subtest:') and not d.startswith('KTAP'):
                recent.append(d[:DIAG_WIDTH])
            continue
        indent = len(m.group(1))
        if diags is not None and m.group(2) == 'not ok' and recent:
            diags[f'{suite}.{m.group(4).strip()}'] = recent[:DIAG_LINES]
        recent = []
        if indent == depth:
            name = f'{suite}.{m.group(4).strip()}'
            if params:
                cases.extend((f'{name}: {p}', st) for p, st in params)
                if status_of(m) == 'fail' and all(st != 'fail' for _, st in params):
                    cases.append((name, 'fail'))
            else:
                cases.append((name, status_of(m)))
            params = []
            seen += 1
        elif indent == depth + 4:
            params.append((m.group(4).strip(), status_of(m)))
        elif indent < depth:
            close()
    close()
    return cases


def main():
    results = sys.argv[1]
    passed = failed = skipped = 0
    failures = []
    checks = os.path.join(results, 'checks.tsv')
    if os.path.exists(checks):
        with open(checks) as f:
            for line in f:
                parts = line.rstrip('\n').split('\t')
                if len(parts) < 3:
                    continue
                name, status, secs = parts[0], parts[1], parts[2]
                detail = parts[3] if len(parts) > 3 else ''
                print(f'  {status:5} {name} ({secs} s){" - " + detail if detail else ""}')
                if status == 'pass':
                    passed += 1
                elif status == 'skip':
                    skipped += 1
                else:
                    failed += 1
                    failures.append(name)
    for root, _, files in sorted(os.walk(results)):
        for fn in sorted(files):
            if not fn.endswith('.ktap'):
                continue
            diags = {}
            cases = parse_ktap(os.path.join(root, fn), diags)
            p = sum(1 for _, s in cases if s == 'pass')
            fl = [n for n, s in cases if s == 'fail']
            sk = sum(1 for _, s in cases if s == 'skip')
            rel = os.path.relpath(os.path.join(root, fn), results)
            print(f'  ktap  {rel}: {p} passed, {len(fl)} failed, {sk} skipped')
            for n in fl:
                print(f'    FAILED {n}')
                for d in diags.get(n, []):
                    print(f'      {d}')
            passed += p
            failed += len(fl)
            skipped += sk
            failures += fl
    if failures:
        print('failed: ' + ', '.join(failures))
    line = f'{passed} passed, {failed} failed'
    if skipped:
        line += f', {skipped} skipped'
    print(line)
    if failed or passed == 0:
        sys.exit(1)


if __name__ == '__main__':
    main()
