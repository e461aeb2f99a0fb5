"""The test suite as other CPUs, thread counts and locales run it.

    python tools/cpu_matrix.py [--profile NAME ...] [--figures-only] [--log-dir DIR] [-- PYTEST ARGS]

Each profile (`tools/cpu_profiles.py`) forces the kernel paths, thread count and locale of another kind of
machine and runs pytest under them in a child process; the emulated EPYC runs pytest itself under qemu
(its child processes, the command-line tests, run natively). Before the tests, each profile prints the
reading's figures at full precision as that profile computes them, so the table shows that the profiles
really sum differently. Without PYTEST ARGS the whole suite runs (for the emulated CPU the core tests;
under emulation they take about 20 times longer). The exit status is 1 when any profile fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.cpu_profiles import PROFILES, CpuProfile, environment_for, unavailable_reason

# What one profile computes of the reading's scripts, printed at full precision.
FIGURES_SCRIPT = """
import json, torch
from core.experiments.reading import causal_printout, permutation_printout
causal, permutation = causal_printout(), permutation_printout()
print(json.dumps({
    "capability": torch.backends.cpu.get_cpu_capability(),
    "threads": torch.get_num_threads(),
    "position 5": causal.figure("position 5: max |change|").value,
    "position 6": causal.figure("position 6: max |change|").value,
    "no mask": causal.lines[-1].value,
    "permutation, learned": permutation.lines[1].value,
}))
"""
EMULATED_DEFAULT_TESTS = ["tests/core", "-m", "not slow"]


def profile_command(profile: CpuProfile, *arguments: str) -> list[str]:
    return [*profile.wrapper, sys.executable, *arguments]


def figures(profile: CpuProfile) -> dict:
    result = subprocess.run(profile_command(profile, "-c", FIGURES_SCRIPT), cwd=ROOT, env=environment_for(profile),
                            capture_output=True, text=True, timeout=3600, check=False)
    if result.returncode != 0:
        return {"error": (result.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_tests(profile: CpuProfile, pytest_arguments: list[str], log: Path) -> tuple[int, float, list[str]]:
    """Run pytest under the profile, its output into `log`; the summary line and the skipped and failed ones."""
    arguments = pytest_arguments or (EMULATED_DEFAULT_TESTS if profile.wrapper else [])
    started = time.monotonic()
    with log.open("w", encoding="utf-8") as output:
        returncode = subprocess.run(
            profile_command(profile, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments),
            cwd=ROOT, env=environment_for(profile), stdout=output, stderr=subprocess.STDOUT, check=False,
        ).returncode
    lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines() or ["no output"]
    reported = [line for line in lines if line.startswith(("SKIPPED", "FAILED", "ERROR"))]
    return returncode, time.monotonic() - started, [lines[-1], *reported]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    pytest_arguments: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, pytest_arguments = argv[:split], argv[split + 1:]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="append", choices=sorted(PROFILES), help="default: every profile")
    parser.add_argument("--figures-only", action="store_true", help="print the figures table, run no tests")
    parser.add_argument("--log-dir", type=Path, help="where each profile's pytest output goes (default: a new temporary folder)")
    args = parser.parse_args(argv)
    profiles = [PROFILES[name] for name in (args.profile or PROFILES)]

    failed = False
    print(f"{'profile':22} {'torch kernels':13} {'threads':>7} {'position 5':>20} {'position 6':>20} "
          f"{'no mask':>20} {'permutation':>20}")
    runnable = []
    for profile in profiles:
        reason = unavailable_reason(profile)
        if reason:
            print(f"{profile.name:22} skipped: {reason}")
            continue
        shown = figures(profile)
        if "error" in shown:
            print(f"{profile.name:22} failed: {shown['error']}")
            failed = True
            continue
        if profile.capability and shown["capability"] != profile.capability:
            print(f"{profile.name:22} skipped: torch runs {shown['capability']} kernels here, not {profile.capability}")
            continue
        print(f"{profile.name:22} {shown['capability']:13} {shown['threads']:>7} {shown['position 5']:>20.17f} "
              f"{shown['position 6']:>20.17f} {shown['no mask']:>20.17f} {shown['permutation, learned']:>20.17f}")
        runnable.append(profile)
    if args.figures_only:
        return 1 if failed else 0

    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="cpu-matrix-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    print()
    for profile in runnable:
        log = log_dir / f"{profile.name}.log"
        print(f"{profile.name}: {profile.summary} (output: {log})", flush=True)
        returncode, seconds, (summary, *reported) = run_tests(profile, pytest_arguments, log)
        failed |= returncode != 0
        print(f"  {'passed' if returncode == 0 else 'FAILED'} in {seconds:.0f} s: {summary}", flush=True)
        for line in reported:
            print(f"    {line}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
