# SPDX-License-Identifier: GPL-2.0
#
# The VRAM benchmark's "vram_bench key=value ..." lines (one per type, from
# simgpu-client -s bench_vram) as tables a person reads, every figure with
# its ratio to the first type of its family (mdev types, then VF
# profiles), and the goals of Documentation/gpumig/performance.rst beside
# what was measured.  Debian's awk (mawk) reads it.

function r(a, b) { return b > 0 ? a / b : 0 }
function mib(x) { return x / 1048576 }
# goal(WHAT, MEASURED, "<=" or ">=", GOAL): one line, met or not.
function goal(what, x, op, g,    ok) {
	x += 0
	ok = op == "<=" ? x <= g : x >= g
	printf "  %-58s %12.4g  goal %s %-9.10g %s\n", what, x, op, g, ok ? "met" : "NOT MET"
}

# A type measured several times (run.sh repeats each): each figure is the
# median of its runs, so one slow run under TCG does not make a ratio.
/vram_bench / {
	t = ""
	for (i = 1; i <= NF; i++)
		if (substr($i, 1, 5) == "type=")
			t = substr($i, 6)
	if (!(t in row)) {
		row[t] = ++n
		runs[n] = 0
	}
	j = row[t]
	rn = ++runs[j]
	for (i = 1; i <= NF; i++) {
		k = index($i, "=")
		if (k) {
			key = substr($i, 1, k - 1)
			keys[key] = 1
			all[j, rn, key] = substr($i, k + 1)
		}
	}
}

# median(J, KEY): the middle value of row J's runs (the lower of two).
function median(j, key,    m, a, x, y, tmp) {
	m = 0
	for (x = 1; x <= runs[j]; x++)
		if ((j, x, key) in all)
			a[++m] = all[j, x, key]
	for (x = 2; x <= m; x++)
		for (y = x; y > 1 && a[y - 1] + 0 > a[y] + 0; y--) {
			tmp = a[y]; a[y] = a[y - 1]; a[y - 1] = tmp
		}
	return m ? a[int((m + 1) / 2)] : ""
}

END {
	if (!n) {
		print "no vram_bench lines"
		exit 1
	}
	for (i = 1; i <= n; i++) {
		for (key in keys)
			v[i, key] = key == "type" ? all[i, 1, key] : median(i, key)
		if (runs[i] > most)
			most = runs[i]
	}
	printf "  (each figure: the median of %d runs of its type)\n", most
	# base[i]: the first row of row i's family; big: the largest mdev type.
	for (i = 1; i <= n; i++) {
		f = index(v[i, "type"], "-vf-") ? "vf" : "mdev"
		if (!(f in first))
			first[f] = i
		base[i] = first[f]
		if (f == "mdev" && (!big || v[i, "vram"] + 0 > v[big, "vram"] + 0))
			big = i
	}
	one = first["mdev"] ? first["mdev"] : 1
	if (!big)
		big = n
	printf "\n  Device part of the downtime (stop to destination ready), microseconds\n"
	printf "  %-14s %8s %8s %8s %8s %8s %8s %10s %6s\n", "type", "stop", "quiesce", "inval", "read", "write", "restore", "total", "ratio"
	for (i = 1; i <= n; i++)
		printf "  %-14s %8.0f %8d %8d %8.0f %8.0f %8.0f %10.0f %6.2f\n", v[i, "type"],
		       v[i, "down_stop_us"], v[i, "quiesce_us"], v[i, "invalidate_us"],
		       v[i, "down_read_us"], v[i, "down_write_us"], v[i, "down_restore_us"],
		       v[i, "down_us"], r(v[i, "down_us"], v[base[i], "down_us"])
	printf "\n  Stop-copy, and the same VRAM moved as stop-and-copy (no pre-copy)\n"
	printf "  %-14s %10s %12s %8s %14s %14s %8s\n", "type", "VRAM MiB", "stop bytes", "% VRAM", "s&c bytes", "s&c down us", "s&c/pc"
	for (i = 1; i <= n; i++)
		printf "  %-14s %10.0f %12d %8.4f %14d %14.0f %8.1f\n", v[i, "type"], mib(v[i, "vram"]),
		       v[i, "stop_bytes"], 100 * r(v[i, "stop_bytes"], v[i, "vram"]),
		       v[i, "stopandcopy_bytes"], v[i, "stopandcopy_us"],
		       r(v[i, "stopandcopy_us"], v[i, "down_us"])
	# The run's baseline: the median over every run of every type of
	# memcpy + CRC's MB/s (each itself the median of five).  Every row
	# moves the same bytes, and the baseline is the machine's, not the
	# type's: one row's lucky or unlucky baseline then does not decide
	# that row's goal.
	nb = 0
	for (j = 1; j <= n; j++)
		for (x = 1; x <= runs[j]; x++)
			if (all[j, x, "memcpy_crc_ns"] + 0 > 0)
				rates[++nb] = r(all[j, x, "first_pass_bytes"] * 1000, all[j, x, "memcpy_crc_ns"])
	for (x = 2; x <= nb; x++)
		for (y = x; y > 1 && rates[y - 1] > rates[y]; y--) {
			tmp = rates[y]; rates[y] = rates[y - 1]; rates[y - 1] = tmp
		}
	runc = nb ? rates[int((nb + 1) / 2)] : 0
	printf "\n  VRAM throughput of the first pass, MB/s, against memcpy and memcpy + one CRC-32 pass over the same bytes\n"
	printf "  (+crc: measured beside the row; the run's: %.0f MB/s, the median of %d, %.0f to %.0f)\n", runc, nb, rates[1], rates[nb]
	printf "  %-14s %8s %8s %8s %10s %9s %9s %11s %9s %11s %11s\n", "type", "bytes MiB", "save", "restore", "memcpy", "+crc", "save/+crc", "restore/+crc", "save/run", "restore/run", "save/memcpy"
	for (i = 1; i <= n; i++) {
		b = v[i, "first_pass_bytes"]
		s = r(b * 1000, v[i, "save_ns"]); w = r(b * 1000, v[i, "restore_ns"])
		m = r(b * 1000, v[i, "memcpy_ns"]); c = r(b * 1000, v[i, "memcpy_crc_ns"])
		sr[i] = r(s, runc); wr[i] = r(w, runc)
		printf "  %-14s %9.1f %8.0f %8.0f %10.0f %9.0f %9.2f %11.2f %9.2f %11.2f %11.2f\n", v[i, "type"], mib(b),
		       s, w, m, c, r(s, c), r(w, c), sr[i], wr[i], r(s, m)
	}
	printf "\n  Accounting and the idle stream\n"
	printf "  %-14s %16s %6s %15s %6s %14s %16s %16s %8s\n", "type", "PRECOPY_INFO ns", "ratio", "DATA_SIZE ns", "ratio", "idle stream B", "quiesce idle us", "quiesce busy us", "step us"
	for (i = 1; i <= n; i++)
		printf "  %-14s %16d %6.2f %15d %6.2f %14d %16d %16d %8d\n", v[i, "type"],
		       v[i, "precopy_info_ns"], r(v[i, "precopy_info_ns"], v[base[i], "precopy_info_ns"]),
		       v[i, "data_size_ns"], r(v[i, "data_size_ns"], v[base[i], "data_size_ns"]),
		       v[i, "idle_stream"], v[i, "quiesce_idle_us"], v[i, "quiesce_busy_us"], v[i, "step_us"]
	# The goals, each read at its worst row: within a family the largest
	# profile against the smallest; across all rows the highest share or
	# size, the lowest throughput.
	printf "\n  Goals (performance.rst), each at its worst row\n"
	for (f in first) {
		lo = hi = 0
		for (i = 1; i <= n; i++) {
			if (base[i] != first[f])
				continue
			if (!lo || v[i, "vram"] + 0 < v[lo, "vram"] + 0)
				lo = i
			if (!hi || v[i, "vram"] + 0 > v[hi, "vram"] + 0)
				hi = i
		}
		if (lo == hi)
			continue
		goal(sprintf("%s: downtime, %s / %s", f, v[hi, "type"], v[lo, "type"]),
		     r(v[hi, "down_us"], v[lo, "down_us"]), "<=", 1.5)
		goal(sprintf("%s: PRECOPY_INFO, %s / %s", f, v[hi, "type"], v[lo, "type"]),
		     r(v[hi, "precopy_info_ns"], v[lo, "precopy_info_ns"]), "<=", 1.5)
		goal(sprintf("%s: MIG_DATA_SIZE, %s / %s", f, v[hi, "type"], v[lo, "type"]),
		     r(v[hi, "data_size_ns"], v[lo, "data_size_ns"]), "<=", 1.5)
	}
	ws = wi = wq = 0
	for (i = 1; i <= n; i++) {
		if (!ws || r(v[i, "stop_bytes"], v[i, "vram"]) > r(v[ws, "stop_bytes"], v[ws, "vram"]))
			ws = i
		if (!wi || v[i, "idle_stream"] + 0 > v[wi, "idle_stream"] + 0)
			wi = i
		if (!wq || r(v[i, "quiesce_busy_us"], v[i, "step_us"]) > r(v[wq, "quiesce_busy_us"], v[wq, "step_us"]))
			wq = i
		sv = sr[i]
		rs = wr[i]
		if (!wsv || sv < wsvv) {
			wsv = i; wsvv = sv
		}
		if (!wrs || rs < wrsv) {
			wrs = i; wrsv = rs
		}
	}
	goal(sprintf("stop-copy bytes, %% of VRAM (%s)", v[ws, "type"]),
	     100 * r(v[ws, "stop_bytes"], v[ws, "vram"]), "<=", 2)
	goal(sprintf("idle stream, bytes (%s)", v[wi, "type"]), v[wi, "idle_stream"], "<=", 1048576)
	goal(sprintf("save, share of the run's memcpy + CRC-32 (%s)", v[wsv, "type"]), wsvv, ">=", 0.8)
	goal(sprintf("restore, share of the run's memcpy + CRC-32 (%s)", v[wrs, "type"]), wrsv, ">=", 0.8)
	goal(sprintf("quiesce of a busy device, preemption steps (%s)", v[wq, "type"]),
	     r(v[wq, "quiesce_busy_us"], v[wq, "step_us"]), "<=", 1)
}
