# SPDX-License-Identifier: MIT
# field CHECK TARGET KEY: one value of the only result of check.json (penny
# check --json) with that check and target; fails when there is not one.
field() {
	python3 -c "
import json, sys
d = json.load(open('check.json'))
r = [r for r in d['results'] if r['check'] == sys.argv[1] and r['target'] == sys.argv[2]]
assert len(r) == 1, (sys.argv, d['results'])
print(r[0][sys.argv[3]])
" "$@"
}
