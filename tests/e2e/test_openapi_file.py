"""openapi/openapi.json is the served document (regenerate with `dpcal openapi -o openapi/openapi.json`)."""

import json

from ..support.server import ROOT


def test_exported_document_equals_served_one(http):
    exported = json.loads((ROOT / "openapi" / "openapi.json").read_text(encoding="utf-8"))
    assert exported == http.get("/openapi.json").json(), "run: dpcal openapi -o openapi/openapi.json"


def test_every_schema_property_has_a_description_and_an_example(http):
    document = http.get("/openapi.json").json()
    missing = []
    for name, component in document["components"]["schemas"].items():
        if name in ("HTTPValidationError", "ValidationError"):
            continue
        for prop, spec in component.get("properties", {}).items():
            if not spec.get("description"):
                missing.append(f"{name}.{prop}: description")
            has_example = spec.get("examples") or "$ref" in spec or any("$ref" in o for o in spec.get("anyOf", []))
            has_example = has_example or (spec.get("type") == "array" and "$ref" in spec.get("items", {}))
            if not has_example:
                missing.append(f"{name}.{prop}: example")
    assert not missing, missing
