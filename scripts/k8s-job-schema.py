#!/usr/bin/env python3
"""Writes the JSON Schema that `gatebench k8s`'s Job is checked against in the CLI's tests
(crates/cli/tests/it/k8s/batch-v1-job.schema.json), from the Kubernetes API types of the
`k8s-openapi` crate (generated from Kubernetes' own OpenAPI definitions).

Every object type reachable from io.k8s.api.batch.v1.Job becomes a definition with exactly the
API's field names (`additionalProperties: false`: a field the API does not know fails, as
serde_ignored did over the typed decode), its required fields (the API types' non-optional
ones), and the JSON type of each field. apiVersion and kind are pinned to batch/v1 and Job.
Types the API serializes as scalars (Quantity, IntOrString, Time, ...) accept any value.

The tests used to decode the Job into k8s-openapi's types directly; that crate's generated
code took about two minutes of a two-core machine's build, for one test. Run this again to
follow a newer API version (the crate only needs to be in Cargo's registry cache: `cargo fetch`
after adding it anywhere, or a download of its .crate file):

    scripts/k8s-job-schema.py ~/.cargo/registry/src/*/k8s-openapi-0.29.0 v1_35
"""

import json
import re
import sys
from pathlib import Path

FIELD = re.compile(r"^\s*pub (\w+): (.+),$")
KEY = re.compile(r'"(\w+)" => Field::Key_(\w+),')


class Gen:
    def __init__(self, root, version):
        self.src = Path(root) / "src" / version
        self.defs = {}

    def file_of(self, path):
        # crate::api::core::v1::PodSpec -> the file of api/core/v1/ that defines PodSpec
        parts = path.split("::")[1:]
        for file in sorted(self.src.joinpath(*parts[:-1]).glob("*.rs")):
            if re.search(r"^pub (struct|enum) " + parts[-1] + r"\b", file.read_text(), re.M):
                return file, parts[-1]
        raise SystemExit(f"no definition of {path} under {self.src}")

    def ref(self, path):
        name = ".".join(path.split("::")[1:])
        if name not in self.defs:
            self.defs[name] = None
            self.defs[name] = self.object(path)
        return {"$ref": f"#/$defs/{name}"}

    def object(self, path):
        file, ty = self.file_of(path)
        text = file.read_text()
        body = re.search(r"pub struct " + ty + r" \{\n(.*?)\n\}\n", text, re.S)
        keys = {rust: json_name for json_name, rust in KEY.findall(text)}
        if body is None or not keys:
            return {}  # a scalar in JSON (a newtype or an untagged enum): any value
        props, required = {}, []
        for line in body.group(1).splitlines():
            m = FIELD.match(line)
            if not m:
                continue
            rust, rtype = m.groups()
            json_name = keys[rust]
            optional = rtype.startswith("Option<")
            if optional:
                rtype = rtype[len("Option<"):-1]
            else:
                required.append(json_name)
            props[json_name] = self.type_(rtype)
        if ty == "Job":
            props["apiVersion"] = {"const": "batch/v1"}
            props["kind"] = {"const": "Job"}
            # k8s-openapi makes every resource's metadata a non-optional field; the API does not
            # require it.
            required = [r for r in required if r != "metadata"] + ["apiVersion", "kind"]
        schema = {"type": "object", "properties": props, "additionalProperties": False}
        if required:
            schema["required"] = sorted(required)
        return schema

    def type_(self, t):
        if t in ("std::string::String", "crate::ByteString"):
            return {"type": "string"}
        if t in ("i32", "i64", "u32", "u64"):
            return {"type": "integer"}
        if t == "f64":
            return {"type": "number"}
        if t == "bool":
            return {"type": "boolean"}
        if t.startswith("std::vec::Vec<"):
            return {"type": "array", "items": self.type_(t[len("std::vec::Vec<"):-1])}
        m = re.match(r"std::collections::BTreeMap<std::string::String, (.+)>$", t)
        if m:
            return {"type": "object", "additionalProperties": self.type_(m.group(1))}
        if t.startswith("crate::"):
            return self.ref(t)
        return {}


def main():
    root, version = sys.argv[1], sys.argv[2]
    gen = Gen(root, version)
    top = gen.ref("crate::api::batch::v1::Job")
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"batch/v1 Job, from k8s-openapi's {version} types (scripts/k8s-job-schema.py)",
        **top,
        "$defs": dict(sorted(gen.defs.items())),
    }
    out = Path(__file__).resolve().parent.parent / "crates/cli/tests/it/k8s/batch-v1-job.schema.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(schema, indent=1) + "\n")
    print(f"{out}: {len(gen.defs)} definitions")


if __name__ == "__main__":
    main()
