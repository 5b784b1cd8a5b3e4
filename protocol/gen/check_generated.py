#!/usr/bin/env python3
# protocol/gen/check_generated.py: fails when protocol/generated/ is not what
# generate.py produces from the schemas (someone edited generated code, or
# changed the generator without regenerating).
#
# Usage: python3 protocol/gen/check_generated.py <schema_dir> <generated_dir>
# Run by ctest as protocol_generated_up_to_date when CK_SCHEMA_DIR is set.
import difflib
import filecmp
import os
import subprocess
import sys
import tempfile


def listing(root):
    out = set()
    for d, _, names in os.walk(root):
        for n in names:
            out.add(os.path.relpath(os.path.join(d, n), root))
    return out


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: check_generated.py <schema_dir> <generated_dir>\n")
        return 2
    schema_dir, committed = argv[1], argv[2]
    generator = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generate.py")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, generator, schema_dir, tmp], check=True)
        want, have = listing(tmp), listing(committed)
        problems = ["missing: " + p for p in sorted(want - have)]
        problems += ["not generated: " + p for p in sorted(have - want)]
        for rel in sorted(want & have):
            a, b = os.path.join(tmp, rel), os.path.join(committed, rel)
            if not filecmp.cmp(a, b, shallow=False):
                problems.append("differs: " + rel)
                with open(a) as fa, open(b) as fb:
                    diff = difflib.unified_diff(fb.readlines(), fa.readlines(),
                                                "committed/" + rel, "generated/" + rel, n=1)
                    sys.stdout.writelines(list(diff)[:40])
    for p in problems:
        print(p)
    if problems:
        print("protocol/generated is stale: run python3 protocol/gen/generate.py %s %s"
              % (schema_dir, committed))
        return 1
    print("protocol/generated is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
