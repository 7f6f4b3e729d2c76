#!/usr/bin/env python3
"""Validates JSON documents against the official OGC SWE Common 3 / CS API Part 2 JSON schemas.

    scripts/validate-swe.py [--schemas DIR] [--formats] [--legacy-resolver] PATH...

PATH is a .json file or a directory of them. Each document is recognised by its shape:
  - a datastream body (`outputName` + `schema`): `schema` against Part 2 observationSchema.json,
    and its resultSchema/recordSchema against SWE Common AnyComponent;
  - a control-stream body (`inputName` + `schema`): `schema` against Part 2 commandSchema.json,
    and its parametersSchema against SWE Common AnyComponent;
  - a bare SWE component (has `type`): against SWE Common AnyComponent.
The component is checked on its own because an om+json schema falls under Part 2's
"any other format" branch, which looks at nothing but obsFormat.

Strict: draft 2020-12 as published, nothing removed or relaxed. `format` is an annotation
there (the schemas' $schema is 2020-12, whose format vocabulary only annotates), so it is not
asserted unless --formats is given; then uri and uri-reference get an RFC 3986 syntax check of
our own and date-time an RFC 3339 one, so the verdict does not depend on which optional format
packages (rfc3987, rfc3339-validator) are installed. References resolve only to the files under
DIR (default: Tests/OSHCoreTests/Fixtures/ogc-schemas); nothing is fetched from the network.

Works with jsonschema 4.10 (Debian bookworm's python3-jsonschema, RefResolver) and 4.18+
(referencing registry). Prints one line per document and a summary; exit 0 when all are
valid, 1 when any is not, 2 when it cannot run (no jsonschema, no schemas, unreadable input).
"""
import datetime
import json
import os
import re
import sys

GEOJSON_PREFIX = "https://geojson.org/schema/"
SWE_ANY = "swecommon/schemas/json/sweCommon.json#/$defs/AnyComponent"
OBS_SCHEMA = "api/part2/openapi/schemas/json/observationSchema.json"
CMD_SCHEMA = "api/part2/openapi/schemas/json/commandSchema.json"


def fail_setup(message):
    print("validate-swe: " + message, file=sys.stderr)
    sys.exit(2)


try:
    import jsonschema
    from jsonschema import Draft202012Validator, FormatChecker
    from jsonschema.exceptions import best_match
except ImportError:
    fail_setup("the Python module jsonschema is missing: install python3-jsonschema "
               "(Debian; scripts/bootstrap.sh does) or `pip install jsonschema`")

# RFC 3986 syntax: allowed characters, well-formed percent escapes, one fragment at most.
_URI_CHARS = re.compile(r"^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?#\[\]]|%[0-9A-Fa-f]{2})*$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def is_uri_reference(s):
    if not isinstance(s, str):
        return True  # formats only apply to strings
    return bool(_URI_CHARS.match(s)) and s.count("#") <= 1


def is_uri(s):
    if not isinstance(s, str):
        return True
    return is_uri_reference(s) and bool(_SCHEME.match(s))


_DATE_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$")


def is_date_time(s):
    """RFC 3339 date-time (leap second allowed, as RFC 3339 does)."""
    if not isinstance(s, str):
        return True
    m = _DATE_TIME.match(s)
    if not m:
        return False
    y, mo, d, h, mi, sec = (int(m.group(i)) for i in range(1, 7))
    try:
        datetime.date(y, mo, d)
    except ValueError:
        return False
    zone_ok = m.group(9) is None or (int(m.group(9)) < 24 and int(m.group(10)) < 60)
    return h < 24 and mi < 60 and sec <= 60 and zone_ok


def format_checker():
    # Our own checks for the formats these schemas use on our members, so the verdict is the
    # same whichever optional format packages (rfc3987, rfc3339-validator) are installed.
    fc = FormatChecker()
    fc.checks("uri")(is_uri)
    fc.checks("uri-reference")(is_uri_reference)
    fc.checks("date-time")(is_date_time)
    return fc


def load_schemas(root):
    """Every .json under root by its file:// URI; geojson.org's documents by their published URL."""
    store = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".json"):
                continue
            path = os.path.join(dirpath, f)
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
            store["file://" + os.path.abspath(path)] = doc
            if os.sep + os.path.join("external", "geojson.org", "schema") + os.sep in path:
                store[GEOJSON_PREFIX + f] = doc
    return store


def make_validators(root, legacy, formats):
    store = load_schemas(root)
    base = "file://" + os.path.abspath(root) + "/"
    for rel in (SWE_ANY.split("#")[0], OBS_SCHEMA, CMD_SCHEMA):
        if base + rel not in store:
            fail_setup("no %s under %s (pass --schemas DIR)" % (rel, root))
    fc = format_checker() if formats else None
    use_registry = not legacy
    if use_registry:
        try:
            from referencing import Registry
            from referencing.exceptions import NoSuchResource
            from referencing.jsonschema import DRAFT202012
        except ImportError:
            use_registry = False  # jsonschema < 4.18
    if use_registry:
        def refuse(uri):
            raise NoSuchResource(ref=uri)  # never fetch: every schema is local
        registry = Registry(retrieve=refuse).with_resources(
            (uri, DRAFT202012.create_resource(doc)) for uri, doc in store.items())

        def make(target):
            return Draft202012Validator({"$ref": base + target}, registry=registry, format_checker=fc)
    else:
        import warnings
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        from jsonschema import RefResolver

        def refuse(uri):
            raise jsonschema.RefResolutionError("not a local schema: " + uri)

        def make(target):
            wrapper = {"$ref": base + target}
            resolver = RefResolver(base_uri="", referrer=wrapper, store=dict(store),
                                   handlers={"http": refuse, "https": refuse})
            return Draft202012Validator(wrapper, resolver=resolver, format_checker=fc)
    return {"component": make(SWE_ANY), "observation": make(OBS_SCHEMA), "command": make(CMD_SCHEMA)}


def pointer(parts):
    return "/" + "/".join(str(p) for p in parts)


DISCRIMINATORS = ("type", "obsFormat", "commandFormat")


def mismatch(leaf, at):
    """True for a failure that says the branch is for another kind of object: its `type` (or
    format) differs, or it is the link form (`href`) of an inline component."""
    path = list(leaf.absolute_path)
    if leaf.validator in ("const", "not", "enum") and len(path) == len(at) + 1 and path[:-1] == at:
        return path[-1] in DISCRIMINATORS
    return leaf.validator == "required" and path == at and leaf.validator_value == ["href"]


def leaves(e):
    """The failures that matter under a oneOf/anyOf: those of the one branch meant for this
    object. None when no branch is (every one is for another kind of object)."""
    if not e.context:
        return [e]
    at = list(e.absolute_path)
    branches = {}
    for c in e.context:
        branches.setdefault(c.relative_schema_path[0], []).append(c)
    meant = []
    for errs in branches.values():
        found = [leaves(c) for c in errs]
        if any(f is None for f in found):
            continue
        found = [leaf for f in found for leaf in f]
        if not any(mismatch(leaf, at) for leaf in found):
            meant.append(found)
    if not meant:
        return None
    return meant[0] if len(meant) == 1 else [e]


def errors(validator, doc, prefix):
    out = []
    for e in validator.iter_errors(doc):
        for leaf in leaves(e) or [e]:
            where = prefix + pointer(leaf.absolute_path) if leaf.absolute_path else prefix or "/"
            message = leaf.message if len(leaf.message) <= 240 else leaf.message[:240] + "…"
            out.append("%s: %s" % (where, message))
    return out


def check(doc, v):
    if not isinstance(doc, dict):
        return ["/: not a JSON object"]
    schema = doc.get("schema")
    if "outputName" in doc and isinstance(schema, dict):
        found = errors(v["observation"], schema, "/schema")
        key = "resultSchema" if "resultSchema" in schema else "recordSchema"
        if key in schema:
            found += errors(v["component"], schema[key], "/schema/" + key)
        return found
    if "inputName" in doc and isinstance(schema, dict):
        found = errors(v["command"], schema, "/schema")
        if "parametersSchema" in schema:
            found += errors(v["component"], schema["parametersSchema"], "/schema/parametersSchema")
        return found
    if "type" in doc:
        return errors(v["component"], doc, "")
    return ["/: neither a datastream body, a control-stream body nor a SWE component"]


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.join(here, "..", "Tests", "OSHCoreTests", "Fixtures", "ogc-schemas")
    legacy = False
    formats = False
    paths = []
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--schemas" and args:
            root = args.pop(0)
        elif a == "--formats":
            formats = True
        elif a == "--legacy-resolver":
            legacy = True  # RefResolver even where the registry exists (to test the 4.10 path)
        elif a.startswith("-"):
            fail_setup("unknown option %s; usage: validate-swe.py [--schemas DIR] [--formats] [--legacy-resolver] PATH..." % a)
        else:
            paths.append(a)
    if not paths:
        fail_setup("usage: validate-swe.py [--schemas DIR] [--formats] [--legacy-resolver] PATH...")
    if not os.path.isdir(root):
        fail_setup("no schema directory %s (pass --schemas DIR)" % root)
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json"))
        else:
            files.append(p)
    if not files:
        fail_setup("no .json documents in " + " ".join(paths))
    v = make_validators(root, legacy, formats)
    valid = 0
    for f in files:
        try:
            with open(f, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, ValueError) as e:
            fail_setup("cannot read %s: %s" % (f, e))
        problems = list(dict.fromkeys(check(doc, v)))  # a swe schema's record is reached twice
        if problems:
            for p in problems:
                print("FAIL %s: %s" % (f, p))
        else:
            valid += 1
            print("ok   %s" % f)
    print("validate-swe: %d/%d documents valid (jsonschema %s%s)"
          % (valid, len(files), version(), ", formats asserted" if formats else ""))
    return 0 if valid == len(files) else 1


def version():
    try:
        from importlib.metadata import version as v
        return v("jsonschema")
    except Exception:
        return getattr(jsonschema, "__version__", "?")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
