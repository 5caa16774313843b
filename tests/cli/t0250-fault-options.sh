#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Option values: every number has a range in its option table; a value
# outside it, an empty string, an empty list entry or an option that does
# nothing is refused before anything runs: exit 2, one line on stderr,
# nothing on stdout, at once.  The issue's reproducers first, then every
# ranged option of every command from the tables (both bounds accepted,
# just outside refused), then the bw server that strangers must not end.
. "$(dirname "$0")/../lib.sh"

# usage_error CMD ARGS...: exit 2, one "penny CMD: " line, no stdout, within 5 s;
# the line in $ERR (no process but penny's: the loops below run it hundreds
# of times)
usage_error() {
	local t0 ms rc lines
	t0=${EPOCHREALTIME/[.,]/}
	"$PENNY" "$@" </dev/null >out 2>err
	rc=$?
	ms=$(((${EPOCHREALTIME/[.,]/} - t0) / 1000))
	mapfile lines <err
	ERR=${lines[0]:-}
	if [ $ms -gt 5000 ] || [ $rc -ne 2 ] || [ -s out ] || [ ${#lines[@]} -ne 1 ] ||
		[[ $ERR != *$'\n' ]] || [[ $ERR != "penny $1: "* ]]; then
		echo "penny $*: exit $rc in ${ms} ms, stdout $(wc -c <out) bytes, stderr:"
		cat err
		return 1
	fi
}

# One case per line: the command line, a tab, a pattern the line must match.
cat >cases <<'EOF'
allreduce-test -A 	-A must not be empty
allreduce-test -A ring,,one-shot	-A 'ring,,one-shot' has an empty element
allreduce-test -A ,ring	has an empty element
allreduce-test -A ring,	has an empty element
allreduce-test -A ring,ring	names ring twice
allreduce-test -A all,two-shot	names two-shot twice
allreduce-test --np -1	--np must be 1..1024, got -1
allreduce-test --np 0	--np must be 1..1024, got 0
allreduce-test --np 1025	--np must be 1..1024, got 1025
allreduce-test -n -1	-n must be 0..1000000, got -1
allreduce-test -w -1	-w must be 0..1000000, got -1
allreduce-test -n 99999999999	-n must be 0..1000000, got 99999999999
allreduce-test --np -99999999999	--np must be 1..1024, got -99999999999
allreduce-test -b 99999999999999999999	-b must be 0..1T, got 99999999999999999999
allreduce-test -c 2	-c must be 0..1, got 2
allreduce-test -f 0.5	-f must be 1..1024, got 0.5
allreduce-test --transport carrier-pigeon	--transport must be one of: shm tcp verbs; got 'carrier-pigeon'
check --transport frob	--transport must be one of: shm tcp verbs; got 'frob'
bw --transport tc	--transport must be one of: tcp verbs; got 'tc'
allreduce-test -f 1e9	-f must be 1..1024, got 1e9
allreduce-test -i 0	-i must be 1..1T, got 0
allreduce-test -e 2T	-e must be 0..1T, got 2T
allreduce-test -b 0 -e 1M -i 1	more than 100000 sizes
allreduce-test -G -1	-G must be 0..100000, got -1
allreduce-test --min-busbw -1	--min-busbw must be 0..1000000000, got -1
allreduce-test --timeout 0	--timeout must be 10ms..24h, got 0
allreduce-test --timeout 25h	--timeout must be 10ms..24h, got 25h
allreduce-test --rank -1	--rank must be 0..8191, got -1
allreduce-test --nranks 0	--nranks must be 1..8192, got 0
allreduce-test --backend host,,nccl	has an empty element
allreduce-test --gpus 0,,1	has an empty element
allreduce-test --csv 	--csv must not be empty
allreduce-test --root 	--root must not be empty
allreduce-test --transport 	--transport must not be empty
allreduce-test --debug=	--debug must not be empty
allreduce-test --debug=INIT,	has an empty element
ring-plan --nodes 2 --gpus 0	--gpus must be 1..16, got 0
ring-plan --nodes 2 --gpus 17	--gpus must be 1..16, got 17
ring-plan --nodes 0	--nodes must be 1..65536, got 0
ring-plan --nodes 2 --rings 0	--rings must be 1..64, got 0
ring-plan --nodes 2 --nic-rate 0	--nic-rate must be 0.001..100000, got 0
ring-plan --nodes 2 --pcie-rate 0	--pcie-rate must be 0.001..10000, got 0
ring-plan --nodes 2 --gpus-per-nic 0	--gpus-per-nic must be 1..16, got 0
ring-plan --nodes 2 --nvlinks -1	--nvlinks must be 0..64, got -1
ring-plan --nodes 2 --nics -1	--nics must be 0..64, got -1
ring-plan --nodes 2 --schedule-size 2	--schedule-size must be 4..1T, got 2
ring-plan --nodes 2 --hosts a,,b	has an empty element
ring-plan --topo-file a.json,	has an empty element
ring-plan --check 	--check must not be empty
ring-plan --nodes 2 --rails 	--rails must not be empty
topo --expect-gpus -1	--expect-gpus must be 0..1024, got -1
topo --expect-nics -1	--expect-nics must be 0..1024, got -1
topo --expect-rate 0	--expect-rate must be 1..100000, got 0
topo --expect-rate nan	invalid number
topo -d nonexistent	-d picks the ports that --expect-state and --expect-rate check
topo -d mlx5_0,,mlx5_1 --expect-state ACTIVE	has an empty element
topo -d mlx5_0:x --expect-state ACTIVE	-d 'mlx5_0:x': want DEV or DEV:PORT, PORT 1..255
topo -d mlx5_0:0 --expect-state ACTIVE	-d 'mlx5_0:0': want DEV or DEV:PORT
topo -d :1 --expect-state ACTIVE	-d ':1': want DEV or DEV:PORT
topo --sysfs-root 	--sysfs-root must not be empty
topo --save 	--save must not be empty
topo --topo-xml 	--topo-xml must not be empty
bw -n -1 --transport tcp --loopback lo	-n must be 1..1000000000, got -1
bw -n 0 --transport tcp --loopback lo	-n must be 1..1000000000, got 0
bw -D 0 --transport tcp --loopback lo	-D must be 100ms..24h, got 0
bw -I -1 --transport tcp --loopback lo	-I must be 0..4096, got -1
bw -q 0	-q must be 1..32, got 0
bw --mtu 0	--mtu must be 256..4096, got 0
bw --mtu 300	--mtu must be 256, 512, 1024, 2048 or 4096
bw -x -1	-x must be 0..255, got -1
bw -i 0	-i must be 1..255, got 0
bw -p 0	-p must be 1..65535, got 0
bw -s 2G	-s must be 0..1G, got 2G
bw --use_cuda -1	--use_cuda must be 0..1023, got -1
bw --expect=0 --transport tcp --loopback lo	--expect must be 1..100, got 0
bw --expect=101 --transport tcp --loopback lo	--expect must be 1..100, got 101
bw --min-gbps -1	--min-gbps must be 0..1000000000, got -1
bw -d 	-d must not be empty
bw -d mlx5_0,	has an empty element
bw -d mlx5_0,mlx5_1	-d names 2 devices: a list is for --all-rails
bw -d a,b,c,d,e,f,g,h,i --all-rails	-d names 9 devices, at most 8
bw --loopback 	--loopback must not be empty
bw --loopback a,b,c	--loopback takes DEV1 or DEV1,DEV2
bw --loopback a, --transport tcp	has an empty element
bw --loopback a -d b	--loopback names the devices; -d is for the other modes
bw --np 1 --transport tcp	1 rank is odd
bw --np 3 --transport tcp	3 ranks is odd
bw --np 2 --transport tcp 127.0.0.1	HOST runs one pair of processes
bw --np 2 --transport tcp --loopback lo	--loopback runs one pair of processes
top -n 0	-n must be 1..1000000000, got 0
top -n -1	-n must be 1..1000000000, got -1
top -i 0	-i must be 50ms..24h, got 0
top -i 10ms	-i must be 50ms..24h, got 10ms
top --lid 12,	has an empty element
top --filter 	--filter must not be empty
top --prom 	--prom must not be empty
EOF

test_expect_success 'the issue'"'"'s reproducers and their kin: exit 2, one line naming the option' '
	while IFS="	" read -r args want; do
		# shellcheck disable=SC2086
		set -- $args
		case $args in *" ") set -- "$@" "" ;; esac
		usage_error "$@" || exit 1
		[[ $ERR == *"$want"* ]] || { echo "penny $args: want \"$want\", got:"; cat err; exit 1; }
	done <cases
'

# Every ranged option of every command, from the tables: the bounds are
# accepted (parsing goes on to the unknown --zzz), just outside is refused.
cat >bounds.py <<'PY'
import re, subprocess, sys
penny = sys.argv[1]
SUF = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
SEC = {"ms": 1e-3, "s": 1, "m": 60, "h": 3600}
def num(v):
    m = re.fullmatch(r"([0-9.e+-]+)([KMGT]?)", v)
    if m:
        return "size" if m.group(2) else "num", float(m.group(1)) * SUF.get(m.group(2), 1)
    m = re.fullmatch(r"([0-9.]+)(ms|s|m|h)", v)
    return "sec", float(m.group(1)) * SEC[m.group(2)]
cmds = [c for c in subprocess.run([penny, "__complete"], capture_output=True,
                                  text=True).stdout.split() if c != "help"]
for cmd in cmds:
    out = subprocess.run([penny, "__complete", cmd], capture_output=True, text=True).stdout
    for line in out.splitlines():
        lng, short, arg, rng = line.split("\t")[:4]
        if rng in ("-", "unchecked"):
            continue
        lo, hi = rng.split("..")
        (kl, vl), (kh, vh) = num(lo), num(hi)
        size = kl == "size" or kh == "size"
        print(f"ok\t{cmd}\t{lng}={lo}")
        print(f"ok\t{cmd}\t{lng}={hi}")
        if vl > 0:
            below = vl * 0.99 if vl != int(vl) or kl == "sec" else vl - 1
            below = int(below) if size else below
            print(f"bad\t{cmd}\t{lng}={below:.6g}" if not size else f"bad\t{cmd}\t{lng}={below}")
        elif not size:
            print(f"bad\t{cmd}\t{lng}=-1")
        if vh < 2 ** 64 - 1:
            above = int(vh) + 1 if size or vh == int(vh) else vh * 1.01
            print(f"bad\t{cmd}\t{lng}={above}")
PY
test_expect_success 'every ranged option: both bounds accepted, just outside refused' '
	python3 bounds.py "$PENNY" >bounds && test "$(grep -c "^bad" bounds)" -ge 40 &&
	while IFS="	" read -r want cmd arg; do
		if [ "$want" = ok ]; then
			test_exit 2 penny $cmd "$arg" --zzz 2>err >out && mapfile lines <err &&
			for l in "${lines[@]}" ""; do
				[[ $l == "penny $cmd: unknown option "?--zzz?* ]] && break
			done && [ -n "$l" ] ||
				{ echo "penny $cmd $arg refused:"; cat err; exit 1; }
		else
			usage_error $cmd "$arg" || exit 1
			[[ $ERR =~ must\ be\ .*,\ got\ |invalid\  ]] ||
				{ echo "penny $cmd $arg:"; cat err; exit 1; }
		fi
	done <bounds
'

test_expect_success '--help shows the range of a ranged option' '
	penny ring-plan --help >help &&
	grep -q -- "--gpus G .* \[1\.\.16\]$" help &&
	penny top --help | grep -q -- "--interval SEC .* \[50ms\.\.24h\]$"
'

test_expect_success 'a factor that rounds back to the same size still steps (-b 1 -f 1.5)' '
	penny allreduce-test --np 2 -b 1 -e 64 -f 1.5 -n 1 -w 0 -d int8 >out &&
	grep -E "^ +[0-9]+ +[0-9]+ +int8" out | awk "{ print \$1 }" | tr "\n" " " >sizes &&
	test "$(cat sizes)" = "1 2 3 4 6 9 13 19 28 42 63 "
'


test_expect_success 'bw server: strangers are dropped with one line each, the client still runs' '
	p=$(free_port) &&
	{ "$PENNY" bw --transport tcp -p $p -n 30 -s 1000 --timeout 20 >srv.out 2>srv.err & } &&
	srv=$! &&
	python3 - $p <<-PY &&
	import socket, struct, sys, time
	port = int(sys.argv[1])
	sys.path.insert(0, "$TOP/tests/helpers")
	import peer
	def conn():
	    return peer.conn(port)
	silent = conn()                                                  # says nothing
	s = conn(); s.close()                                            # closes at once
	s = conn(); s.sendall(b"GET / HTTP/1.0\r\n\r\n" * 10); time.sleep(0.2); s.close()
	s = conn(); s.sendall(struct.pack("<IHH", 0x5042574f, 9, 100) + bytes(100)); time.sleep(0.2); s.close()
	s = conn(); s.sendall(struct.pack("<IHH", 0x5042574f, 1, 12)); time.sleep(0.2); s.close()
	s = conn(); s.sendall(bytes(range(256)) * 4); time.sleep(0.2); s.close()
	time.sleep(0.3)
	PY
	penny bw --transport tcp -p $p -n 30 -s 1000 --timeout 20 127.0.0.1 >cli.out 2>cli.err &&
	wait $srv && cat srv.err &&
	test "$(grep -c "^penny bw: dropped a connection from 127.0.0.1:[0-9]*: " srv.err)" -ge 5 &&
	grep -q "not a penny bw client" srv.err && grep -q "hello version 9" srv.err &&
	grep -q "closed before saying a whole hello" srv.err &&
	grep "^ 1000 " cli.out >a && grep "^ 1000 " srv.out >b && test_cmp a b &&
	no_procs_left
'

test_expect_success 'bw server: a silent stranger does not hold the server past its timeout' '
	p=$(free_port) || exit 1
	python3 - $p <<-PY &
	import socket, sys, time
	port = int(sys.argv[1])
	for _ in range(100):
	    try:
	        s = socket.create_connection(("127.0.0.1", port)); break
	    except OSError:
	        time.sleep(0.05)
	time.sleep(10)
	PY
	py=$!
	within 6 penny bw --transport tcp -p $p --timeout 2 >out 2>err
	kill $py 2>/dev/null; wait $py
	test "$WITHIN_RC" = 2 && cat err &&
	grep -q "dropped a connection from .*: said no hello within the timeout" err &&
	grep -q "no client connected within 2 s" err
'

test_expect_success 'bw under a launcher with one rank is a plain process (srun -n 1 style)' '
	p=$(free_port) &&
	{ SLURM_PROCID=0 SLURM_NTASKS=1 "$PENNY" bw --transport tcp -p $p -n 20 -s 100 \
		--timeout 20 >srv.out 2>srv.err & } && srv=$! &&
	SLURM_PROCID=0 SLURM_NTASKS=1 penny bw --transport tcp -p $p -n 20 -s 100 --timeout 20 \
		127.0.0.1 >cli.out && wait $srv &&
	grep -q "^ 100 " cli.out && grep -q "^ 100 " srv.out
'
test_done
