#!/usr/bin/env python3
"""bench/nvtx/nsys_ranges.py REPORT.sqlite -- the vyre NVTX ranges of an Nsight Systems
report exported to SQLite (nsys export --type sqlite): one line per range, in time
order, with its nesting depth on its thread, its length, and the kernels whose driver
launch call lies inside it (and cuGraphLaunch calls). Prints a table."""
import sqlite3
import sys


def main(path):
    c = sqlite3.connect(path)
    names = dict(c.execute("select id, value from StringIds"))
    ranges = [(s, e, t if t else names.get(tid), g) for s, e, t, tid, g in c.execute(
        "select start, end, text, textId, globalTid from NVTX_EVENTS "
        "where end is not null order by start")]
    launches = list(c.execute(
        "select r.start, r.end, r.globalTid, r.nameId, k.shortName "
        "from CUPTI_ACTIVITY_KIND_RUNTIME r join CUPTI_ACTIVITY_KIND_KERNEL k "
        "on r.correlationId = k.correlationId"))
    graphs = list(c.execute(
        "select start, end, globalTid from CUPTI_ACTIVITY_KIND_RUNTIME where nameId in "
        "(select id from StringIds where value like 'cuGraphLaunch%')"))

    def inside(s, e, g, rs, re, rg):
        return rg == g and s <= rs and re <= e

    print("%-32s %5s %10s %8s  %s" % ("range", "depth", "length us", "kernels",
                                       "launched inside"))
    for s, e, text, g in ranges:
        depth = sum(1 for s2, e2, _, g2 in ranges
                    if g2 == g and s2 <= s and e <= e2 and (s2, e2) != (s, e))
        ks = [(names.get(api, "?").replace("_ptsz", ""), names.get(k, k))
              for rs, re, rg, api, k in launches if inside(s, e, g, rs, re, rg)]
        what = sorted({"%s %s" % kv for kv in ks})
        ng = sum(1 for rs, re, rg in graphs if inside(s, e, g, rs, re, rg))
        if ng:
            what.append("%d cuGraphLaunch" % ng)
        print("%-32s %5d %10.1f %8d  %s" % (text, depth, (e - s) / 1000, len(ks),
                                             ", ".join(what)))


if __name__ == "__main__":
    main(sys.argv[1])
