#!/usr/bin/env bash
# Regenerates the README's STRATA_* table from the config registry.
set -euo pipefail
cd "$(dirname "$0")/.."
table=$("${1:-build}/src/strata-info" --params)
python3 - "$table" <<'PY'
import re, sys
readme = open("README.md").read()
new = re.sub(r"(<!-- params:begin -->\n).*?(<!-- params:end -->)",
             lambda m: m.group(1) + sys.argv[1] + "\n" + m.group(2), readme, flags=re.S)
open("README.md", "w").write(new)
PY
