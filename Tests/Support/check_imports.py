#!/usr/bin/env python3
"""Checks that Package.swift says what each target uses: every module a target's Swift files import is one of
its declared dependencies (or the system's), and every declared dependency is imported somewhere in it. And
that the layers point one way: a module in docs/architecture.md's table imports only the project modules its
row allows, and what those may import in turn. And that the light libraries stay light: nothing the Swift
libraries for apps reach through Package.swift comes from a package but swift-log, or is a daemon's or the
transfers' module (docs/architecture.md, "Rules the graph keeps"). And that system calls that can be interrupted
go through ReachdSystem's one funnel (`SystemCall.retrying`): no Swift file under Sources/ outside
Sources/ReachdSystem mentions EINTR (a hand-written retry loop).

usage: check_imports.py [--light-only] PACKAGE_JSON PACKAGE_DIR   (PACKAGE_JSON: `swift package dump-package`)
Prints one line per problem and exits 1 if there is any; prints "imports: N targets checked" (with --light-only:
"light: N libraries checked") and exits 0 if not."""
import json
import os
import re
import sys

SYSTEM = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Musl", "Darwin", "Dispatch",
          "Synchronization", "XCTest", "Testing", "_Concurrency", "Observation", "RegexBuilder", "CoreFoundation"}
IMPORT = re.compile(r"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|private|fileprivate)\s+)?import\s+"
                    r"(?:(?:struct|class|enum|func|protocol|typealias|var|let)\s+)?([A-Za-z_]\w*)", re.M)
# The libraries an app depends on, what packages they may reach, and the project modules they must not reach.
LIGHT_LIBRARIES = ("ReachdNetwork", "Reachability")
LIGHT_PACKAGES = {"swift-log"}
HEAVY_MODULES = {"ReachdServiceKit", "ReachdMetrics", "ReachdDaemon", "ReachdTransfers", "ReachdTransferModel",
                 "ReachdTransferProtocol", "ReachdTransferClient", "ReachabilityTransfers"}


def dependencies(target):
    names = set()
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                names.add(dependency[kind][0])
    return names


def layers(path):
    """docs/architecture.md's module table: each module and the project modules it may import, transitively."""
    allowed = {}
    for line in open(path, encoding="utf-8"):
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) < 5 or not re.fullmatch(r"`\w+`", cells[1]):
            continue
        listed = re.sub(r"\([^)]*\)", "", cells[3]).replace("the kit", "ReachdServiceKit")
        allowed[cells[1].strip("`")] = {name.strip() for name in listed.split(",") if re.fullmatch(r"\w+", name.strip())}
    closure = {}
    def reach(module, seen=()):
        if module not in closure:
            found = set()
            for direct in allowed.get(module, ()):
                if direct not in seen:
                    found |= {direct} | reach(direct, seen + (module,))
            closure[module] = found
        return closure[module]
    return {module: reach(module) for module in allowed}


def heavy_reach(package):
    """Each light library's problems: a package (other than LIGHT_PACKAGES) or a heavy module it reaches."""
    targets = {target["name"]: target for target in package["targets"]}
    problems = []
    for library in LIGHT_LIBRARIES:
        seen, pending, reached = set(), [library], []
        while pending:
            name = pending.pop()
            if name in seen or name not in targets:
                continue
            seen.add(name)
            for dependency in targets[name].get("dependencies", []):
                if "product" in dependency:
                    product, owner = dependency["product"][0], dependency["product"][1]
                    if owner.lower() not in LIGHT_PACKAGES:
                        reached.append(f"{product} (package {owner}, through {name})")
                else:
                    pending.append(dependency.get("byName", dependency.get("target"))[0])
        reached += [f"{module}" for module in sorted(seen & HEAVY_MODULES)]
        problems += [f"{library}: reaches {what}, which the light libraries must not compile" for what in reached]
    return problems


# The one module that may handle EINTR itself: the system-call funnel lives there.
FUNNEL_MODULE = os.path.join("Sources", "ReachdSystem")
EINTR = re.compile(r"\bEINTR\b")


def interrupted_calls(base):
    """Each Swift file under Sources/, outside FUNNEL_MODULE, that mentions EINTR, as a problem."""
    problems = []
    for root, _, files in os.walk(os.path.join(base, "Sources")):
        relative = os.path.relpath(root, base)
        if relative == FUNNEL_MODULE or relative.startswith(FUNNEL_MODULE + os.sep):
            continue
        for name in sorted(files):
            if name.endswith(".swift"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as source:
                    for number, line in enumerate(source, 1):
                        if EINTR.search(line):
                            problems.append(f"{os.path.relpath(path, base)}:{number}: mentions EINTR; retry interrupted calls "
                                            "with SystemCall.retrying (ReachdSystem), as docs/architecture.md says")
    return problems


def imports(directory):
    found = {}
    for root, _, files in os.walk(directory):
        for name in files:
            if name.endswith(".swift"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as source:
                    # Text in multi-line string literals (a Python program a test runs) is not Swift.
                    code = re.sub(r'"""(?:.|\n)*?"""', "", source.read())
                    for module in IMPORT.findall(code):
                        found.setdefault(module, path)
    return found


def main():
    arguments = sys.argv[1:]
    light_only = arguments[:1] == ["--light-only"]
    package = json.load(open(arguments[-2]))
    base = arguments[-1]
    if light_only:
        problems = heavy_reach(package)
        for problem in problems:
            print(problem)
        if problems:
            sys.exit(1)
        print(f"light: {len(LIGHT_LIBRARIES)} libraries checked")
        return
    may_import = layers(os.path.join(base, "docs", "architecture.md"))
    problems = []
    checked = 0
    for target in package["targets"]:
        if target["type"] not in ("regular", "executable", "test"):
            continue
        directory = os.path.join(base, target.get("path") or ("Tests" if target["type"] == "test" else "Sources"), "" if target.get("path") else target["name"])
        declared = dependencies(target)
        used = imports(directory)
        if not used:
            continue  # a C target: its dependencies are headers
        checked += 1
        for module, path in sorted(used.items()):
            if module not in declared and module not in SYSTEM and module != target["name"]:
                problems.append(f"{target['name']}: imports {module} ({os.path.relpath(path, base)}) but does not declare it")
        for module in sorted(declared - set(used)):
            problems.append(f"{target['name']}: declares {module} but imports it nowhere")
        if target["name"] in may_import:
            for module, path in sorted(used.items()):
                if module in may_import and module != target["name"] and module not in may_import[target["name"]]:
                    problems.append(f"{target['name']}: imports {module} ({os.path.relpath(path, base)}), against the layers in docs/architecture.md")
    problems += heavy_reach(package)
    problems += interrupted_calls(base)
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    print(f"imports: {checked} targets checked")


main()
