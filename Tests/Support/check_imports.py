#!/usr/bin/env python3
"""Checks that Package.swift says what each target uses: every module a target's Swift files import is one of
its declared dependencies (or the system's), and every declared dependency is imported somewhere in it. And
that the layers point one way: a module in docs/architecture.md's table imports only the project modules its
row allows, and what those may import in turn.

usage: check_imports.py PACKAGE_JSON PACKAGE_DIR   (PACKAGE_JSON: `swift package dump-package`)
Prints one line per problem and exits 1 if there is any; prints "imports: N targets checked" and exits 0 if not."""
import json
import os
import re
import sys

SYSTEM = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Musl", "Darwin", "Dispatch",
          "Synchronization", "XCTest", "Testing", "_Concurrency", "Observation", "RegexBuilder", "CoreFoundation"}
IMPORT = re.compile(r"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|private|fileprivate)\s+)?import\s+"
                    r"(?:(?:struct|class|enum|func|protocol|typealias|var|let)\s+)?([A-Za-z_]\w*)", re.M)


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
    package = json.load(open(sys.argv[1]))
    base = sys.argv[2]
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
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    print(f"imports: {checked} targets checked")


main()
