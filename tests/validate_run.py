#!/usr/bin/env python3
"""Validates kiln run directories against schemas/report.schema.json and schemas/result.schema.json.

  validate_run.py RUN_DIR...        each a directory holding report.json and/or results.jsonl
  validate_run.py --tree ROOT...    every run directory under each ROOT (a test's temp dir)

A run directory holding a file named .kiln-no-schema is left out (a test that corrupts its files on
purpose marks them so); --tree says which it left out. A final line of results.jsonl without its
newline that does not parse is a torn write (kiln tolerates one and ignores it): it is skipped, and
said so. Prints "schema: DIR ok (report + N result lines)" per directory, or each error as
FILE:LINE: JSON-PATH: message. Exits 0 when all are valid, 1 on any error, 2 on bad usage, 77 when
python3-jsonschema is missing.
"""
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    print("schema: SKIP: python3-jsonschema is not installed (apt-get install python3-jsonschema)")
    sys.exit(77)

OPT_OUT = ".kiln-no-schema"
SCHEMA_DIR = os.environ.get("KILN_SCHEMA_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "schemas")
MAX_ERRORS = 20  # per file: one broken writer makes every line wrong


def load_schemas():
    schemas = {}
    for name in ("report", "result"):
        with open(os.path.join(SCHEMA_DIR, name + ".schema.json"), encoding="utf-8") as f:
            schemas[name] = json.load(f)
    return schemas


def make_validator(schema, all_schemas):
    """A draft 2020-12 validator that resolves the cross-file $refs, on jsonschema 4.10 and later."""
    cls = jsonschema.Draft202012Validator
    try:
        from referencing import Registry, Resource  # jsonschema 4.18 and later
    except ImportError:
        store = {s["$id"]: s for s in all_schemas}
        return cls(schema, resolver=jsonschema.RefResolver.from_schema(schema, store=store))
    registry = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in all_schemas])
    return cls(schema, registry=registry)


def where(error):
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return "$" + path


def errors_of(validator, doc):
    return sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))


class Checker:
    def __init__(self):
        schemas = load_schemas()
        both = list(schemas.values())
        self.report = make_validator(schemas["report"], both)
        self.result = make_validator(schemas["result"], both)
        self.errors = 0

    def error(self, where_, message):
        self.errors += 1
        print(f"schema: {where_}: {message}")

    def check_report(self, path):
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            self.error(path, f"not JSON: {e}")
            return
        for e in errors_of(self.report, doc)[:MAX_ERRORS]:
            self.error(f"{path}: {where(e)}", e.message[:300])

    def check_line(self, path, n, line):
        try:
            doc = json.loads(line)
        except ValueError as e:
            self.error(f"{path}:{n}", f"not JSON: {e}")
            return
        for e in errors_of(self.result, doc)[:MAX_ERRORS]:
            self.error(f"{path}:{n}: {where(e)}", e.message[:300])

    def check_results(self, path):
        """Returns the number of lines validated."""
        with open(path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        tail = lines.pop()  # b"" when the file ends with its newline
        if tail:
            try:
                json.loads(tail)
                lines.append(tail)  # whole but for its newline: kiln reads it, so it must be valid
            except ValueError:
                print(f"schema: {path}:{len(lines) + 1}: torn final line (no newline, not JSON) skipped, as kiln does")
        before = self.errors
        for n, raw in enumerate(lines, 1):
            if self.errors - before >= MAX_ERRORS:
                self.error(path, "too many errors; the rest of the file was not checked")
                break
            self.check_line(path, n, raw.decode("utf-8", errors="replace"))
        return len(lines)

    def check_dir(self, d):
        report, results = os.path.join(d, "report.json"), os.path.join(d, "results.jsonl")
        have_report, have_results = os.path.isfile(report), os.path.isfile(results)
        if not have_report and not have_results:
            self.error(d, "neither report.json nor results.jsonl is there")
            return
        before = self.errors
        if have_report:
            self.check_report(report)
        n = self.check_results(results) if have_results else 0
        if self.errors == before:
            parts = (["report"] if have_report else []) + ([f"{n} result lines"] if have_results else [])
            print(f"schema: {d} ok ({' + '.join(parts)})")


def run_dirs_under(root):
    """Every directory under root holding report.json or results.jsonl, and those marked to skip."""
    found, skipped = [], []
    for d, subdirs, files in os.walk(root):
        subdirs.sort()
        if "report.json" not in files and "results.jsonl" not in files:
            continue
        (skipped if OPT_OUT in files else found).append(d)
    return found, skipped


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    checker = Checker()
    dirs = argv
    if argv[0] == "--tree":
        dirs = []
        for root in argv[1:]:
            found, skipped = run_dirs_under(root)
            dirs += found
            for d in skipped:
                print(f"schema: {d} skipped ({OPT_OUT}: its files are corrupt on purpose)")
    for d in dirs:
        checker.check_dir(d)
    if checker.errors:
        print(f"schema: {checker.errors} error(s) in {len(dirs)} run director{'y' if len(dirs) == 1 else 'ies'}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
