#!/usr/bin/env python3
"""Small seeds for nsys_sqlite_fuzz from real Nsight Systems exports.

    fuzz/nsys_seeds.py OUT_DIR EXPORT.sqlite ...

Each export is cut down to the tables the reader reads, with few rows and names cut to 120 characters (the kernels, copies, sets
and syncs, the CUDA calls that launched them plus a few others, 40 NVTX ranges, the strings these
name), on 512-byte pages, so a seed is a few KiB to tens of KiB and the fuzzer's mutations land in
the rows. Written twice: byte 0 = 0 (read from memory) and 1 (read from a file). A third copy per
export renames META_DATA_EXPORT to EXPORT_META_DATA (the 2.x schema's name).
"""
import os
import shutil
import sqlite3
import sys
import tempfile

KEEP = {
    "META_DATA_EXPORT", "EXPORT_META_DATA", "StringIds", "TARGET_INFO_GPU",
    "TARGET_INFO_CUDA_DEVICE", "TARGET_INFO_SESSION_START_TIME", "ThreadNames", "NVTX_EVENTS",
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME",
}
GPU = ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
       "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"]


def cut(src, dst):
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o644)
    db = sqlite3.connect(dst)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    for t in tables:
        if t not in KEEP:
            db.execute(f'DROP TABLE "{t}"')
    tables = [t for t in tables if t in KEEP]
    gpu = [t for t in GPU if t in tables]
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        linked = " UNION ".join(f"SELECT correlationId FROM {t}" for t in gpu) or "SELECT NULL"
        db.execute("DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId NOT IN (" + linked +
                   ") AND rowid NOT IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 20)")
    if "NVTX_EVENTS" in tables:
        db.execute("DELETE FROM NVTX_EVENTS WHERE rowid NOT IN (SELECT rowid FROM NVTX_EVENTS LIMIT 40)")
    if "StringIds" in tables:
        used = []
        for t, cols in (("CUPTI_ACTIVITY_KIND_KERNEL", ("demangledName", "shortName")),
                        ("CUPTI_ACTIVITY_KIND_RUNTIME", ("nameId",)), ("NVTX_EVENTS", ("textId",)),
                        ("ThreadNames", ("nameId",))):
            if t in tables:
                have = {r[1] for r in db.execute(f"PRAGMA table_info({t})")}
                used += [f"SELECT {c} FROM {t}" for c in cols if c in have]
        db.execute("DELETE FROM StringIds WHERE id NOT IN (" + (" UNION ".join(used) or "SELECT NULL") + ")")
        db.execute("UPDATE StringIds SET value = substr(value, 1, 120)")
    if "ThreadNames" in tables:
        db.execute("DELETE FROM ThreadNames WHERE rowid NOT IN (SELECT rowid FROM ThreadNames LIMIT 10)")
    if "META_DATA_EXPORT" in tables:
        db.execute("DELETE FROM META_DATA_EXPORT WHERE name NOT LIKE 'EXPORT_SCHEMA%' AND name NOT LIKE 'EXPORT_PRODUCT%'")
    db.commit()
    db.execute("PRAGMA page_size = 512")
    db.execute("VACUUM")
    db.close()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for src in sys.argv[2:]:
            name = os.path.splitext(os.path.basename(src))[0]
            small = os.path.join(tmp, name + ".sqlite")
            cut(src, small)
            data = open(small, "rb").read()
            for prefix in (b"\0", b"\1"):
                with open(os.path.join(out, f"{name}.{prefix[0]}"), "wb") as f:
                    f.write(prefix + data)
            db = sqlite3.connect(small)
            if db.execute("SELECT 1 FROM sqlite_master WHERE name='META_DATA_EXPORT'").fetchone():
                db.execute("ALTER TABLE META_DATA_EXPORT RENAME TO EXPORT_META_DATA")
                db.execute("UPDATE EXPORT_META_DATA SET value='2.9.0' WHERE name='EXPORT_SCHEMA_VERSION'")
                db.commit()
            db.close()
            with open(os.path.join(out, f"{name}.schema2"), "wb") as f:
                f.write(b"\0" + open(small, "rb").read())


if __name__ == "__main__":
    main()
