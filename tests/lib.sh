# TAP helpers for penny's shell tests (after git's t/test-lib.sh).
#   . "$(dirname "$0")/../lib.sh"
#   test_expect_success 'what' 'commands'
#   test_done
set -u
: "${TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${PENNY:=$TOP/penny}"
: "${BUILD:=$TOP/build}"
TEST_N=0
TEST_FAILED=0
TRASH=$(mktemp -d "${TMPDIR:-/tmp}/penny-test.XXXXXX")
trap 'rm -rf "$TRASH"' EXIT
cd "$TRASH" || exit 1

penny() { "$PENNY" "$@"; }

test_expect_success() {
	local what=$1 body=$2 out
	TEST_N=$((TEST_N + 1))
	if out=$(eval "$body" 2>&1); then
		echo "ok $TEST_N - $what"
	else
		echo "not ok $TEST_N - $what"
		TEST_FAILED=$((TEST_FAILED + 1))
		printf '%s\n' "$out" | tail -n 40 | sed 's/^/#   /'
	fi
}

test_skip() {
	TEST_N=$((TEST_N + 1))
	echo "ok $TEST_N # skip $1: $2"
}

# test_cmp EXPECTED ACTUAL: diff with context on mismatch
test_cmp() { diff -u "$1" "$2"; }

# Expect a command to fail with exit code $1: test_exit 2 penny foo
test_exit() {
	local want=$1 rc
	shift
	"$@"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "expected exit $want, got $rc: $*" >&2
		return 1
	fi
}

# Valid JSON (each line one JSON value when $2 = lines)
json_valid() {
	if [ "${2:-}" = lines ]; then
		python3 -c 'import json,sys
n=0
for l in open(sys.argv[1]):
    if l.strip(): json.loads(l); n+=1
assert n>0, "no JSON lines"' "$1"
	else
		python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1"
	fi
}

test_done() {
	echo "1..$TEST_N"
	[ "$TEST_FAILED" -eq 0 ]
}
