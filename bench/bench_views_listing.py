#!/usr/bin/python3
"""What the netCDF views (-o sidecars=nc: GROUP.nc beside each group) cost a listing: `ls` and
`ls -l` of a v2 root group with GROUPS subgroups of ARRAYS small float32 arrays each (xarray's
_ARRAY_DIMENSIONS and an attribute on each), without sidecars, with `-o sidecars=tif` (the root
holds no arrays: no entry more) and with `-o sidecars=tif,nc` (one GROUP.nc per subgroup: twice
the entries, and each one's size needs the metadata of every array in its group), side by side
in one run, each listing on a fresh mount, the options' order rotated per repetition. Two
stores: the plain one (every document read from the store) and the same with consolidated
metadata (.zmetadata, what xarray's to_zarr writes by default).

Also the cost per entry (the listing's median over its entries), since a view adds an entry
per group: a view that costs no more than a group's own entry adds at most that.

  ZF_BENCH_LISTING_GROUPS=300, ZF_BENCH_LISTING_ARRAYS=5
  ZF_BENCH_REPS=7, ZF_BENCH_DIR, ZARRFS (harness.py)
"""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402

OPTIONS = (("none", ""), ("tif", "sidecars=tif"), ("tif,nc", "sidecars=tif,nc"))


def make_store(root, groups, arrays, consolidated):
    """The wide store (made once per shape, kept while its stamp matches)."""
    import zarr
    name = "wide-%dx%d%s.zarr" % (groups, arrays, "-consolidated" if consolidated else "")
    path = os.path.join(root, name)
    stamp = os.path.join(path, ".done")
    if os.path.exists(stamp):
        return path
    if os.path.exists(path):
        import shutil
        shutil.rmtree(path)
    g = zarr.open_group(path, mode="w")
    for i in range(groups):
        s = g.create_group("g%04d" % i)
        s.attrs["title"] = "group %d" % i
        for j in range(arrays):
            a = s.create_dataset("v%d" % j, shape=(10, 20), chunks=(5, 10), dtype="f4")
            a.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
            a.attrs["units"] = "K"
    if consolidated:
        zarr.consolidate_metadata(path)
    open(stamp, "w").close()
    return path


def one_listing(cfg, store, mnt, logfile, opt, long):
    """Seconds of one `ls` (or `ls -l`) of the root on a fresh mount, and its entries."""
    with H.zarrfs_daemon(cfg, store, mnt, logfile, opts=[opt], one_file=False):
        cmd = ["ls", "-l", mnt] if long else ["ls", mnt]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, timeout=60).stdout
        t = time.perf_counter() - t0
        return t, len(out.splitlines()) - (1 if long else 0)


def main():
    cfg = H.knobs(7, groups=H.env("ZF_BENCH_LISTING_GROUPS", 300, int),
                  arrays=H.env("ZF_BENCH_LISTING_ARRAYS", 5, int))
    s = H.Session("bench_views_listing", cfg)
    s.intro("ls and ls -l of %d groups x %d arrays, without and with netCDF views, %d "
            "repetitions" % (cfg["groups"], cfg["arrays"], cfg["reps"]))
    work = os.path.join(cfg["dir"], "views-listing")
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    logfile = os.path.join(work, "daemons.log")
    results, rows_md = {}, []
    for consolidated in (False, True):
        kind = "consolidated" if consolidated else "plain"
        store = make_store(work, cfg["groups"], cfg["arrays"], consolidated)
        H.prewarm(store)
        reps = []
        for r in range(cfg["reps"]):
            rep = {}
            order = OPTIONS[r % 3:] + OPTIONS[:r % 3]
            for long in (False, True):
                for label, opt in order:
                    t, n = one_listing(cfg, store, mnt, logfile, opt, long)
                    key = "%s_%s" % ("ls_l" if long else "ls", label)
                    rep[key + "_ms"] = 1000 * t
                    rep[key + "_entries"] = n
                    rep[key + "_us_per_entry"] = 1e6 * t / max(n, 1)
            H.log("  %s rep %d: ls %.0f / %.0f / %.0f ms, ls -l %.0f / %.0f / %.0f ms "
                  "(none / tif / tif,nc)"
                  % ((kind, r + 1) + tuple(rep["%s_%s_ms" % (w, o)] for w in ("ls", "ls_l")
                                            for o, _ in OPTIONS)))
            reps.append(rep)
        res = H.summarize(reps)
        results[kind] = {"reps": reps, "summary": res}
        m = res["median"]
        for w, label in (("ls", "`ls`"), ("ls_l", "`ls -l`")):
            rows_md.append(
                "| %s | %s | %d / %d | %.1f (%s) | %.1f (%s) | %.1f (%s) | **%.2f** | %.0f / %.0f"
                " |" % (kind, label, m["%s_none_entries" % w], m["%s_tif,nc_entries" % w],
                        m["%s_none_ms" % w], H.rng(res, "%s_none_ms" % w, "%.0f"),
                        m["%s_tif_ms" % w], H.rng(res, "%s_tif_ms" % w, "%.0f"),
                        m["%s_tif,nc_ms" % w], H.rng(res, "%s_tif,nc_ms" % w, "%.0f"),
                        statistics.median(rp["%s_tif,nc_ms" % w] / rp["%s_tif_ms" % w]
                                          for rp in reps),
                        m["%s_tif_us_per_entry" % w], m["%s_tif,nc_us_per_entry" % w]))
    md = ("| store | listing | entries without / with views | no sidecars, ms (range) | "
          "`sidecars=tif`, ms | `sidecars=tif,nc`, ms | tif,nc / tif | µs per entry: tif / "
          "tif,nc |\n|---|---|--:|--:|--:|--:|--:|--:|\n" + "\n".join(rows_md))
    s.finish(os.path.join(work, "results"), "bench-views-listing", results, md,
             "medians of %d; each listing on a fresh mount (cached mode), options rotated per "
             "repetition; ratios per repetition, then the median" % cfg["reps"])


if __name__ == "__main__":
    main()
