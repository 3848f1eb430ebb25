"""Reads {"patterns": [...], "samples": [...]} as JSON on stdin and prints, as JSON, whether each
pattern matches each sample under Python's JSON Schema validator (jsonschema's `pattern`
keyword, which is re.search), or, where jsonschema is not installed, under re.search itself.
A pattern Python cannot compile is reported with its error instead of verdicts."""
import json
import re
import sys

request = json.load(sys.stdin)
try:
    from jsonschema import Draft202012Validator

    def matches(pattern, sample):
        return Draft202012Validator({"type": "string", "pattern": pattern}).is_valid(sample)

    engine = "jsonschema"
except ImportError:  # the same rule jsonschema applies

    def matches(pattern, sample):
        return re.search(pattern, sample) is not None

    engine = "re"

out = {"engine": engine, "results": {}}
for pattern in request["patterns"]:
    try:
        re.compile(pattern)
    except re.error as e:
        out["results"][pattern] = {"error": str(e)}
        continue
    out["results"][pattern] = {"verdicts": [matches(pattern, s) for s in request["samples"]]}
json.dump(out, sys.stdout)
