#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The libvirt hook (gpumig-mover-hook) with hostile <gpumig:mover>
# metadata: a source that ssh would read as an option, or a rate the
# source host's shell would run, each fails the hook with a message and
# starts nothing; good metadata starts the mover with "--" before ssh's
# host; a mover that exits 1 is started again, a bounded number of times.  Natively, with a stand-in for gpumig-mover that records its
# arguments (make check's static step).
set -u
hook=$(dirname "$0")/gpumig-mover-hook
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
printf '#!/bin/sh\necho "$@" >>%s/argv\n' "$d" >"$d/mover"
chmod +x "$d/mover"
xml() {
	printf "<domain><metadata><gpumig:mover xmlns:gpumig='urn:gpumig:mover:1' %s/></metadata>" "$1"
	printf "<devices><hostdev mode='subsystem' type='mdev'><source>"
	printf "<address uuid='0f5d6a8e-5a0c-4c43-9b1e-6d2f00000001'/></source></hostdev></devices></domain>"
}
hook() {
	xml "$1" | GPUMIG_MOVER=$d/mover GPUMIG_MOVER_LOGDIR=$d/log GPUMIG_MOVER_TIMEOUT=1 \
		"$hook" dom migrate begin - 2>>"$d/err"
}
rc=0
for m in "source='-oProxyCommand=touch $d/pwned'" "source='root@hostA' rate='1;touch $d/pwned'" \
	"source='a b'" "source='\$(touch $d/pwned)'" "source='root@hostA' rate='-5'" \
	"source='root@hostA' rate='1e9'"; do
	if hook "$m"; then
		echo "not refused: $m"
		rc=1
	fi
done
[ "$(grep -c 'refused$' "$d/err")" = 6 ] || { echo "refusals without their message:"; cat "$d/err"; rc=1; }
[ ! -e "$d/argv" ] || { echo "a refused hook started the mover: $(cat "$d/argv")"; rc=1; }
hook "source='root@hostA' rate='268435456'" || { echo "good metadata refused"; rc=1; }
for i in $(seq 50); do
	[ -s "$d/argv" ] && break
	sleep 0.1
done
grep -qx -- "--timeout 1 follow 0f5d6a8e-5a0c-4c43-9b1e-6d2f00000001 -- ssh -o BatchMode=yes -- root@hostA gpumig-mover source {} --rate 268435456" \
	"$d/argv" || { echo "the mover started as: $(cat "$d/argv" 2>/dev/null)"; rc=1; }
[ ! -e "$d/pwned" ] || { echo "metadata ran a command"; rc=1; }

# A mover that exits 1 (an error, the post-copy going on) is started
# again, GPUMIG_MOVER_RETRIES times at most; 3 (abandoned) is final.
printf '#!/bin/sh\nn=$(cat %s/runs 2>/dev/null || echo 0)\necho $((n + 1)) >%s/runs\n[ $n -ge 2 ] && exit 3\nexit 1\n' \
	"$d" "$d" >"$d/mover"
rm -rf "$d/log"
xml "source='local'" | GPUMIG_MOVER=$d/mover GPUMIG_MOVER_LOGDIR=$d/log GPUMIG_MOVER_TIMEOUT=1 \
	GPUMIG_MOVER_RETRIES=5 GPUMIG_MOVER_RETRY_DELAY=0 "$hook" dom migrate begin - 2>>"$d/err" ||
	{ echo "local metadata refused"; rc=1; }
for i in $(seq 50); do
	grep -q "exited 3" "$d"/log/*.log 2>/dev/null && break
	sleep 0.1
done
sleep 0.3
[ "$(cat "$d/runs" 2>/dev/null)" = 3 ] &&
	[ "$(grep -c '^gpumig-mover exited 1$' "$d"/log/*.log)" = 2 ] &&
	[ "$(grep -c '^gpumig-mover exited 3$' "$d"/log/*.log)" = 1 ] ||
	{ echo "a mover exiting 1, 1, then 3 was not run three times:"; cat "$d"/log/*.log; rc=1; }
# ... and GPUMIG_MOVER_RETRIES bounds the restarts.
printf '#!/bin/sh\necho x >>%s/runs2\nexit 1\n' "$d" >"$d/mover"
rm -rf "$d/log"
xml "source='local'" | GPUMIG_MOVER=$d/mover GPUMIG_MOVER_LOGDIR=$d/log GPUMIG_MOVER_TIMEOUT=1 \
	GPUMIG_MOVER_RETRIES=2 GPUMIG_MOVER_RETRY_DELAY=0 "$hook" dom migrate begin - 2>>"$d/err"
for i in $(seq 50); do
	[ "$(grep -c 'exited 1' "$d"/log/*.log 2>/dev/null)" = 3 ] && break
	sleep 0.1
done
sleep 0.3
[ "$(wc -l <"$d/runs2")" = 3 ] ||
	{ echo "GPUMIG_MOVER_RETRIES=2: the mover ran $(wc -l <"$d/runs2") times, not 3"; rc=1; }
# A count the shell would read as octal (08) is refused, with a message.
xml "source='local'" | GPUMIG_MOVER=$d/mover GPUMIG_MOVER_LOGDIR=$d/log GPUMIG_MOVER_TIMEOUT=1 \
	GPUMIG_MOVER_RETRIES=08 GPUMIG_MOVER_RETRY_DELAY=0 "$hook" dom migrate begin - 2>"$d/err8"
grep -q "GPUMIG_MOVER_RETRIES '08' is not a count" "$d/err8" ||
	{ echo "GPUMIG_MOVER_RETRIES=08 taken: $(cat "$d/err8")"; rc=1; }
exit $rc
