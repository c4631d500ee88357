#!/usr/bin/env python3
"""Runs moat's GoogleTest suites and counts individual test cases.

Pass 1 runs `meson test` (every suite) as the invoking user. When that user is root, pass 2
runs the integration suite again as an unprivileged user (uid 65534 by default), because
the two runs prove different things: as root the sandbox maps its users to an unprivileged
host uid; unprivileged, it must get there through user namespaces alone.

Then the README's first command, scripts/demo, runs on the bundled example with the binaries of
this build (not its own release build: the same code, without a second full build in CI); each
of its checks ("  ok   ..." or "  FAIL ...") is one case, so the quick start cannot break
unnoticed.

Then, with clang, every libFuzzer target in tests/fuzz is built in <build>-fuzz and run for
--fuzz-seconds (30 by default); each target is one case. The fuzz build starts with the first
pass, in the background at the lowest CPU priority (nice 19), because the suites mostly wait on
processes, sockets and timers and leave a core idle; the fuzz targets still run after the tests,
alone, for their full time.

Each suite's line ends with its wall time, so the slow ones are visible in CI's log.

The last line printed is `N passed, N failed, N skipped`; the exit status is non-zero if any
case failed or any test binary died without reporting.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

BUILD_DIR = "."


def count_xml(path, label, counts, failures):
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        counts["failed"] += 1
        failures.append(f"{label}: unreadable result file {path}: {e}")
        return
    for case in root.iter("testcase"):
        name = f"{label}: {case.get('classname')}.{case.get('name')}"
        failed = case.find("failure")
        if failed is None:
            failed = case.find("error")
        if failed is not None:
            counts["failed"] += 1
            failures.append(name)
            # The binary's output is cut to its tail below; the failure's own text is kept here.
            text = failed.get("message") or failed.text or ""
            print(f"--- {name} failed:\n{text[:4000]}", flush=True)
        elif case.get("result") == "skipped" or case.find("skipped") is not None:
            counts["skipped"] += 1
        elif case.get("status") == "notrun" or case.get("result") == "suppressed":
            counts["skipped"] += 1
        else:
            counts["passed"] += 1


def introspect_tests(build):
    out = subprocess.run(["meson", "introspect", "--tests", build], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def run_pass(tests, outdir, label, counts, failures, demote=None, timeout_scale=1):
    """Runs each test binary itself with --gtest_output, optionally as another user."""
    for t in tests:
        # One file per pass: the unprivileged pass cannot overwrite root's files.
        xml_path = os.path.join(outdir, f"{label}-{t['name']}.xml")
        cmd = list(t["cmd"]) + [f"--gtest_output=xml:{xml_path}"]
        env = dict(os.environ)
        env.update(t.get("env") or {})
        if demote is not None:
            env["HOME"] = demote["home"]
            env["XDG_STATE_HOME"] = os.path.join(demote["home"], ".local/state")
            env["XDG_CONFIG_HOME"] = os.path.join(demote["home"], ".config")
            env["TMPDIR"] = demote["home"]
            cmd = ["setpriv", f"--reuid={demote['uid']}", f"--regid={demote['gid']}",
                   "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"] + cmd
        timeout = (t.get("timeout") or 300) * timeout_scale
        print(f"[{label}] {t['name']} ...", flush=True)
        started = time.monotonic()
        try:
            proc = subprocess.run(cmd, env=env, cwd=t.get("workdir") or BUILD_DIR,
                                  timeout=timeout, capture_output=True, text=True,
                                  errors="replace")
            rc = proc.returncode
            output = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as e:
            rc = -1
            output = f"timed out after {timeout} s\n" + (e.stdout or b"").decode(errors="replace") \
                if isinstance(e.stdout, bytes) else f"timed out after {timeout} s"
        print(f"[{label}] {t['name']}: {time.monotonic() - started:.1f} s, exit {rc}", flush=True)
        if os.path.exists(xml_path):
            before = counts["failed"]
            count_xml(xml_path, f"{label} {t['name']}", counts, failures)
            if rc != 0 and counts["failed"] == before:
                counts["failed"] += 1
                failures.append(f"{label} {t['name']}: exited {rc} although every case passed")
        else:
            counts["failed"] += 1
            failures.append(f"{label} {t['name']}: died without a result file (exit {rc})")
        if rc != 0:
            sys.stdout.write(output[-8000:])
            sys.stdout.flush()


def fuzz_targets(src):
    """The executable('fuzz_...') names declared in tests/fuzz/meson.build."""
    import re
    with open(os.path.join(src, "tests", "fuzz", "meson.build")) as f:
        return re.findall(r"executable\('(fuzz_[a-z_]+)'", f.read())


class FuzzBuild(threading.Thread):
    """Builds the libFuzzer targets with clang in <build>-fuzz, at nice 19, while the suites run;
    `error` is the failed command and its output, or None."""

    def __init__(self, build):
        super().__init__(daemon=True)
        self.src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.targets = fuzz_targets(self.src)
        self.dir = build.rstrip("/") + "-fuzz"
        self.error = None

    def run(self):
        env = dict(os.environ, CC="clang", CXX="clang++")
        nice = ["nice", "-n", "19"]
        try:
            if not os.path.exists(os.path.join(self.dir, "build.ninja")):
                subprocess.run(nice + ["meson", "setup", self.dir, self.src, "-Dfuzz=true",
                                       "-Dbenches=false", "--buildtype=debugoptimized"],
                               env=env, check=True, capture_output=True, text=True)
            subprocess.run(nice + ["ninja", "-C", self.dir] +
                           [f"tests/fuzz/{t}" for t in self.targets],
                           env=env, check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as e:
            self.error = (" ".join(e.cmd), (e.stdout or "")[-4000:] + (e.stderr or "")[-4000:])


def start_fuzz_build(build, seconds):
    """The background fuzz build, or None when there is nothing to build (no clang, or
    --fuzz-seconds 0)."""
    if seconds <= 0 or not shutil.which("clang++"):
        return None
    fuzz = FuzzBuild(build)
    fuzz.start()
    return fuzz


def run_fuzz(fuzz, seconds, counts, failures):
    """Waits for the fuzz build and runs each target for a bounded time; each target counts as
    one test case (skipped, with the reason, without clang)."""
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    targets = fuzz_targets(src)
    if fuzz is None:
        print("[fuzz] skipped: clang++ is not installed (scripts/lib.sh installs clang)")
        counts["skipped"] += len(targets)
        return
    started = time.monotonic()
    fuzz.join()
    print(f"[fuzz] waited {time.monotonic() - started:.1f} s for the fuzz build", flush=True)
    if fuzz.error is not None:
        counts["failed"] += len(targets)
        failures.append(f"fuzz: the clang fuzz build failed: {fuzz.error[0]}")
        sys.stdout.write(fuzz.error[1])
        return
    fuzz_build = fuzz.dir
    seeds = {"fuzz_policy_toml": [os.path.join(src, "examples", "policies")]}
    for t in targets:
        corpus = tempfile.mkdtemp(prefix=f"moat-{t}-")
        cmd = [os.path.join(fuzz_build, "tests", "fuzz", t), f"-max_total_time={seconds}",
               "-timeout=10", "-rss_limit_mb=2048", corpus] + seeds.get(t, [])
        print(f"[fuzz] {t} for {seconds} s ...", flush=True)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                                  timeout=seconds * 3 + 60, cwd=corpus)
            rc, output = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired:
            rc, output = -1, f"timed out after {seconds * 3 + 60} s"
        if rc == 0:
            counts["passed"] += 1
        else:
            counts["failed"] += 1
            failures.append(f"fuzz: {t} found a failing input (exit {rc})")
            sys.stdout.write(output[-8000:])
        shutil.rmtree(corpus, ignore_errors=True)


def run_demo(build, counts, failures):
    """Runs scripts/demo against this build's binaries; each of its checks is one case."""
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, MOAT_BUILD=os.path.abspath(build))
    print("[demo] scripts/demo ...", flush=True)
    try:
        proc = subprocess.run(["bash", os.path.join(src, "scripts", "demo")], env=env,
                              capture_output=True, text=True, errors="replace", timeout=600)
        rc, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired:
        rc, output = -1, "timed out after 600 s"
    checks = 0
    for line in output.splitlines():
        if line.startswith("  ok   "):
            counts["passed"] += 1
            checks += 1
        elif line.startswith("  FAIL "):
            counts["failed"] += 1
            failures.append(f"demo: {line[7:]}")
            checks += 1
    if rc != 0 and not any(f.startswith("demo:") for f in failures):
        counts["failed"] += 1
        failures.append(f"demo: scripts/demo exited {rc} after {checks} checks")
    if rc != 0:
        sys.stdout.write(output[-8000:])
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--suite", action="append", help="only these meson suites")
    ap.add_argument("--no-unprivileged", action="store_true")
    ap.add_argument("--uid", type=int, default=65534)
    ap.add_argument("--gid", type=int, default=65534)
    ap.add_argument("--no-demo", action="store_true", help="do not run scripts/demo")
    ap.add_argument("--fuzz-seconds", type=int, default=30,
                    help="how long each libFuzzer target runs (0: not at all)")
    args = ap.parse_args()
    global BUILD_DIR
    BUILD_DIR = os.path.abspath(args.build)

    tests = [t for t in introspect_tests(args.build)
             if not args.suite or any(s.split(":")[-1] in args.suite for s in t["suite"])]
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failures = []
    outdir = tempfile.mkdtemp(prefix="moat-test-")
    fuzz = start_fuzz_build(args.build, args.fuzz_seconds) if not args.suite else None
    try:
        run_pass(tests, outdir, "root" if os.geteuid() == 0 else "user", counts, failures)
        if os.geteuid() == 0 and not args.no_unprivileged and shutil.which("setpriv"):
            integ = [t for t in tests if any(s.split(":")[-1] == "integration" for s in t["suite"])]
            home = tempfile.mkdtemp(prefix="moat-unpriv-")
            os.chown(home, args.uid, args.gid)
            os.chmod(outdir, 0o777)
            run_pass(integ, outdir, f"uid{args.uid}", counts, failures,
                     demote={"uid": args.uid, "gid": args.gid, "home": home})
            shutil.rmtree(home, ignore_errors=True)
        if not args.no_demo and not args.suite:
            run_demo(args.build, counts, failures)
        if args.fuzz_seconds > 0 and not args.suite:
            run_fuzz(fuzz, args.fuzz_seconds, counts, failures)
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
    if failures:
        print("\nFailed:")
        for f in failures:
            print(f"  {f}")
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
