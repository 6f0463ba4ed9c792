#!/usr/bin/env python3
"""The README's configuration table must be exactly `strata-info --params`."""
import re
import subprocess
import sys

info, readme = sys.argv[1], sys.argv[2]
expected = subprocess.run([info, "--params"], check=True, capture_output=True, text=True).stdout.strip()
text = open(readme).read()
match = re.search(r"<!-- params:begin -->\n(.*?)\n<!-- params:end -->", text, flags=re.S)
if not match:
    sys.exit("README.md has no <!-- params:begin/end --> block")
if match.group(1).strip() != expected:
    sys.exit("README.md's STRATA_* table differs from strata-info --params; "
             "run scripts/update-readme-params.sh")
print("README table matches the registry (%d rows)" % (expected.count("\n") - 1))
