#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run gpumig's fuzz targets (tools/fuzz): the migration stream parser
# (stream_fuzz) and simgpu's architectural-state validator (arch_fuzz),
# each on JOBS processes that share one working corpus, started from the
# corpus kept in the repository (tools/fuzz/corpus/TARGET) and freshly
# generated seeds.  Prints each target's executions, summed over its
# processes, and fails on any finding (the input is kept in
# BINDIR/artifacts).
#
#   scripts/fuzz.sh [--seconds S | --runs N] [--jobs J] [--target T]
#                   [--update-corpus] BINDIR
#
# --seconds S: each target runs S seconds (make check: 60 in all).
# --runs N: the stream target runs N executions in all, the arch target
#   N / 10 (make fuzz-long: 10,000,000).
# --update-corpus: afterwards, merge the working corpus into the
#   repository's (libFuzzer -merge=1 keeps only inputs that add coverage).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

secs="" runs="" jobs=2 targets="stream arch" update=0
while [ $# -gt 1 ]; do
	case $1 in
	--seconds) secs=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--target) targets=$2; shift 2 ;;
	--update-corpus) update=1; shift ;;
	*) die "usage: fuzz.sh [--seconds S | --runs N] [--jobs J] [--target T] [--update-corpus] BINDIR" ;;
	esac
done
[ $# -eq 1 ] || die "usage: fuzz.sh [--seconds S | --runs N] [--jobs J] [--target T] [--update-corpus] BINDIR"
bindir=$(cd "$1" && pwd)
[ -n "$secs$runs" ] || secs=60
ntargets=$(echo "$targets" | wc -w)
mkdir -p "$bindir/artifacts"
rc=0
for t in $targets; do
	case $t in
	stream) gen=mkcorpus max_len=140000 ;;
	arch) gen=mkarchseed max_len=4096 ;;
	*) die "no fuzz target $t" ;;
	esac
	repo=$GPUMIG_TOP/tools/fuzz/corpus/$t
	work=$bindir/corpus-$t seed=$bindir/seed-$t
	mkdir -p "$work" "$seed"
	"$bindir/$gen" "$seed" >/dev/null
	if [ -n "$runs" ]; then
		n=$runs
		[ "$t" = arch ] && n=$((runs / 10))
		limit=(-runs=$(((n + jobs - 1) / jobs)))
		what="$n executions"
	else
		limit=(-max_total_time=$((secs / ntargets)))
		what="$((secs / ntargets)) s"
	fi
	echo "fuzz: $t, $what on $jobs processes"
	pids=()
	for j in $(seq 1 "$jobs"); do
		# -reload: each process picks up what the others add to $work.
		(cd "$bindir" && exec "./${t}_fuzz" "${limit[@]}" -max_len=$max_len \
			-timeout=20 -rss_limit_mb=2048 -reload=10 -print_final_stats=1 \
			-seed=$((RANDOM * 32768 + RANDOM + j)) \
			-artifact_prefix="$bindir/artifacts/$t-" \
			"$work" "$seed" "$repo") >"$bindir/$t-$j.log" 2>&1 &
		pids+=($!)
	done
	failed=0
	for p in "${pids[@]}"; do
		wait "$p" || failed=1
	done
	total=0
	for j in $(seq 1 "$jobs"); do
		e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$bindir/$t-$j.log")
		total=$((total + ${e:-0}))
	done
	if [ $failed -ne 0 ]; then
		for j in $(seq 1 "$jobs"); do
			grep -E -A40 'ERROR: |==[0-9]+==|runtime error|deadly signal|abort' \
				"$bindir/$t-$j.log" | head -80 || true
		done
		echo "fuzz: $t: FINDING after $total executions (inputs in $bindir/artifacts)"
		rc=1
		continue
	fi
	echo "fuzz: $t: $total executions, no finding; corpus $(ls "$work" | wc -l) inputs"
	if [ $update -eq 1 ]; then
		mkdir -p "$repo"
		(cd "$bindir" && "./${t}_fuzz" -merge=1 -max_len=$max_len "$repo" "$work") \
			>"$bindir/$t-merge.log" 2>&1
		echo "fuzz: $t: repository corpus now $(ls "$repo" | wc -l) inputs"
	fi
done
exit $rc
