#!/usr/bin/env python3
"""Kernel-step mutants: a step of a kernel path removed by a patch to a copy of the source,
as cargo-mutants mutates, rather than by a switch compiled into the path. For each mutant the
script copies the tree (tracked files and untracked ones git does not ignore), applies the patch (its old text must occur exactly once),
builds the loom tests against the copy and runs the model test that must fail, with the
failure message the model gives. A mutant that builds and passes survives, and fails the
script; so does a patch whose old text is gone (the list must stay true).

usage: ci/patch-mutants.py          (ci/loom.sh runs it after the loom models)
"""
import os, shutil, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, file, old text, new text, the loom test file and test name that must fail, the
# message it must fail with, and what the mutant stands for.
MUTANTS = [
    dict(
        name="IdleExitNoFlush",
        file="src/idle.rs",
        old="    if crate::sched_core::flush_smp_call_function_queue(cpus, fair, cpu, plat)\n",
        new="    if false && crate::sched_core::flush_smp_call_function_queue(cpus, fair, cpu, plat)\n",
        test=("idle_flush", "an_elided_kick_is_run_by_the_idle_exit"),
        expect="a kick stranded",
        what="do_idle returns without flush_smp_call_function_queue: a kick whose IPI the "
             "platform elided for a polling CPU is never run",
    ),
]


def tracked_files():
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, check=True, capture_output=True).stdout
    return [f for f in out.decode().split("\0") if f]


def copy_tree(dest):
    if os.path.exists(dest):
        shutil.rmtree(dest)
    for f in tracked_files():
        src = os.path.join(ROOT, f)
        if not os.path.isfile(src):
            continue
        to = os.path.join(dest, f)
        os.makedirs(os.path.dirname(to), exist_ok=True)
        shutil.copy2(src, to)


def main():
    work = os.path.join(ROOT, "target", "patch-mutants")
    env = dict(os.environ)
    env["RUSTFLAGS"] = (env.get("RUSTFLAGS", "") + " --cfg nohz_loom").strip()
    env["CARGO_TARGET_DIR"] = os.path.join(work, "target")
    env.setdefault("LOOM_MAX_PREEMPTIONS", "2")
    for k in ("LOOM_MAX_DURATION", "LOOM_MAX_PERMUTATIONS"):
        env.pop(k, None)
    failed = 0
    for m in MUTANTS:
        tree = os.path.join(work, "tree")
        copy_tree(tree)
        path = os.path.join(tree, m["file"])
        text = open(path).read()
        hits = text.count(m["old"])
        if hits != 1:
            print(f"patch mutant {m['name']}: the old text occurs {hits} times in {m['file']} "
                  f"(must be once): update ci/patch-mutants.py")
            failed += 1
            continue
        open(path, "w").write(text.replace(m["old"], m["new"]))
        file, test = m["test"]
        start = time.time()
        run = subprocess.run(
            ["cargo", "test", "-p", "loom-tests", "--release", "--test", file, "--", test,
             "--exact"],
            cwd=tree, env=env, capture_output=True, text=True)
        took = time.time() - start
        log = run.stdout + run.stderr
        if run.returncode != 0 and m["expect"] in log:
            print(f"patch mutant {m['name']} ({m['file']}): killed by {file}::{test} "
                  f"({m['expect']!r}) in {took:.0f} s: {m['what']}")
        elif run.returncode != 0:
            print(f"patch mutant {m['name']}: {file}::{test} failed, but not with "
                  f"{m['expect']!r}:\n{log[-3000:]}")
            failed += 1
        else:
            print(f"patch mutant {m['name']} ({m['file']}): SURVIVED {file}::{test}: "
                  f"{m['what']}")
            failed += 1
    print(f"patch mutants: {len(MUTANTS) - failed} of {len(MUTANTS)} killed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
