#!/usr/bin/env python3
"""Regenerate link/probe-code.ld: the linker script that keeps the code a probe runs together.

    python3 scripts/probe-code-order.py [--binary target/release/pullpath] [--add] -- IMAGE --full [FLAGS]

Runs `pullpath probe IMAGE --full FLAGS` under valgrind's callgrind (apt-get install valgrind),
takes every function of pullpath's binary that ran, and writes one input-section pattern per
function into link/probe-code.ld, which build.rs hands to the linker. `--add` keeps the patterns
already there and appends the new ones: run it once per kind of pull worth covering, the most
common first and without `--add` (TLS with a token, then plain HTTP, a mirror, a proxy).

Why: the kernel maps an executable's code in 64 KiB windows around each page fault
(fault-around), and without an order the 1,850 functions a probe runs lie in nearly every
window of the 16 MiB `.text` next to the cluster commands' code: `probe --full` peaked at
18 MiB, 12 of them the binary's own pages (docs/benchmarks.md, issue 26).

The names are written without what changes from build to build, so the script outlives a
compiler or dependency update. pullpath builds with v0 symbol names (.cargo/config.toml), which
spell a generic function's parameters and the crate that instantiated it: a name loses its
crates' disambiguators and back-references (and the `.llvm.N` suffix LTO adds) and still means
one function. A legacy name (a build whose RUSTFLAGS replace the config's) loses its hash
(`17h<16 hex>E`), which makes its pattern match every instance of a generic function: more than
ran, never less (`<&T as Debug>::fmt` has 1,700). A function renamed since is matched by nothing
and stays in `.text`: the binary links as before, only that function's window is mapped again;
rerun this script after large changes to the probe.

Only loopback is dialled if IMAGE names a registry on loopback: give it one (the harness in
docs/benchmarks.md: a Distribution registry on 127.0.0.1 and the node flags of tests/support).

The committed script came from four runs, in this order: the lab up, scenario `healthy`,
`echo alice-secret | ip netns exec pp-node python3 scripts/probe-code-order.py -- \
registry.example.test/team-a/small:v1 --full --username alice --password-stdin \
--containerd-certs /var/lib/pullpath-lab/containerd/node/certs.d -o json` with a release build;
then `--add` with the loopback harness's plain-HTTP pull of a 4 x 64 MiB image; then both again
with `--add --binary` a release archive's build kept unstripped (`CARGO_PROFILE_DIST_STRIP=none
cargo build --config .cargo/static.toml --profile dist --target x86_64-unknown-linux-gnu`), whose
size-optimised inlining leaves other functions standing.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "link", "probe-code.ld")

# callgrind_annotate's function lines: "  1,234 (0.01%)  ???:SYMBOL [OBJECT]" (the object is
# not trusted: see `ran`).
FUNCTION_LINE = re.compile(r"\s*[\d,]+ \([^)]*\)\s+\S*:(\S+) \[.*\]$")
LEGACY_HASH = re.compile(r"17h[0-9a-f]{16}E.*$")
V0_CRATE = re.compile(r"Cs[0-9A-Za-z]+_")
V0_BACKREF = re.compile(r"B[0-9A-Za-z]*_")
# callgrind marks a function's recursive calls by a suffix ("'2").
RECURSION = re.compile(r"'\d+$")
LLVM_SUFFIX = re.compile(r"\.llvm\.\d+$")
# What a linker script may hold in a section pattern without quoting.
PLAIN = re.compile(r"^[A-Za-z0-9_.$*]+$")


def pattern(symbol):
    """The symbol's section-name pattern with what differs between builds replaced by `*`."""
    if symbol.startswith("_ZN"):
        return LEGACY_HASH.sub("*", symbol)
    symbol = LLVM_SUFFIX.sub("*", symbol)
    if symbol.startswith("_R"):
        return V0_BACKREF.sub("B*_", V0_CRATE.sub("Cs*_", symbol))
    return symbol


def built_elsewhere(pattern):
    """The same generic instance as the other build profile names it. A v0 name ends with the
    crate that instantiated it when that is not the crate defining it: an optimised build
    instantiates the library's async bodies in the binary's crate (`…Cs*_8pullpath`), an
    unoptimised one shares the library's own (`-Z share-generics`), named by a back-reference
    (`…B*_`). Both are written, so the order holds in either build; the other's instance
    rarely exists too."""
    own = "Cs*_8pullpath"
    if pattern.startswith("_R") and pattern.endswith(own):
        return pattern[: -len(own)] + "B*_"
    return None


def ran(binary, callgrind_out):
    """The functions of `binary` that callgrind saw run, each with every other name at its
    address. Known by the binary's symbol table, not by the object callgrind names: valgrind
    takes an object's code to be its `.text`, and puts the functions of a `.text.probe` this
    script made before under `???`. The other names matter because LLVM merges identical
    functions into one, whose section bears one name and whose aliases the others: callgrind
    may report any of them."""
    symbols = subprocess.run(
        ["nm", "--defined-only", binary], capture_output=True, text=True, check=True,
    ).stdout
    names_at = {}
    address_of = {}
    for line in symbols.splitlines():
        fields = line.split(" ", 2)
        if len(fields) == 3:
            names_at.setdefault(fields[0], []).append(fields[2])
            address_of[fields[2]] = fields[0]
    annotated = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--inclusive=no", callgrind_out],
        capture_output=True, text=True, check=True,
    ).stdout
    for line in annotated.splitlines():
        found = FUNCTION_LINE.match(line)
        if found:
            name = RECURSION.sub("", found[1])
            if name in address_of:
                yield from names_at[address_of[name]]


def written():
    """The patterns link/probe-code.ld holds now, in its order."""
    if not os.path.exists(OUT):
        return []
    with open(OUT) as f:
        return [m[1] for m in re.finditer(r"\*\(\.text\.(\S+) ", f.read())]


def script(patterns):
    lines = [
        "/* Generated by scripts/probe-code-order.py from the functions `pullpath probe --full`",
        "   runs: it keeps them together so a probe maps fewer pages of the binary (build.rs,",
        "   docs/benchmarks.md). Regenerate, do not edit. */",
        "SECTIONS {",
        "  .text.probe : {",
    ]
    for p in patterns:
        lines.append(f"    *(.text.{p} .text.unlikely.{p})")
    # ring's assembly (AES-GCM, SHA-2, bignum) has one `.text` per object, not a section per
    # function: every probe runs it (TLS, digests), so all of it; its objects come bundled in
    # ring's rlib (or, linked otherwise, in its own static library).
    lines.append("    *libring-*.rlib:*(.text) *libring_core_*.a:*(.text)")
    lines += ["  }", "} INSERT BEFORE .text;", ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "pullpath"))
    parser.add_argument("--add", action="store_true", help="keep the patterns already written")
    parser.add_argument("probe_args", nargs="+", help="IMAGE and flags after --")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
             args.binary, "probe", *args.probe_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        if run.returncode != 0:
            sys.stderr.write(run.stderr[-4000:])
            sys.exit(f"probe-code-order: the probe exited {run.returncode}; a passing --full "
                     "probe runs the code worth grouping")
        found = {p for p in map(pattern, ran(args.binary, out)) if PLAIN.match(p)}
        found |= {twin for twin in map(built_elsewhere, found) if twin}
    if not found:
        sys.exit("probe-code-order: no function of the binary ran (stripped binary?)")
    kept = written() if args.add else []
    # The first run's functions first, each later run's new ones after them: a pull of the first
    # kind then maps little of the code only the others run.
    patterns = kept + sorted(found - set(kept))
    with open(OUT, "w") as f:
        f.write(script(patterns))
    print(f"probe-code-order: {len(patterns)} patterns ({len(patterns) - len(kept)} new) written "
          f"to {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
