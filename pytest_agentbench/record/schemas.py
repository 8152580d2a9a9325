"""Generate the shipped JSON Schemas (``record/schema/*.schema.json``) from ``record/models.py``.

    python -m pytest_agentbench.record.schemas --write  # rewrite the four files
    python -m pytest_agentbench.record.schemas          # exit 1 when a shipped file is out of date

Writing is asked for (``--write``): without it the command only checks, so running it against an
installed package never rewrites that package's files. The files are generated, never edited by
hand: change the models, run this with ``--write``, commit both. A test
compares the shipped files with :func:`schema_text`, so a model changed without regenerating (or a
file edited by hand) fails the suite.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

#: ``$defs`` names in the published files (stable names consumers may ``$ref``), by model class.
DEF_NAMES = {
    "Action": "action",
    "AttemptSummary": "attempt",
    "BudgetSummary": "budget",
    "Criterion": "criterion",
    "ManifestTask": "task",
    "Metrics": "metricFields",
    "StatGroup": "statGroup",
    "Statistics": "statistics",
    "StepRecord": "step",
    "Suite": "suite",
    "Task": "task",
    "TaskRow": "taskRow",
    "TaskStat": "taskStat",
    "Usage": "usage",
    "Verdict": "verdict",
    "VmCost": "vmCost",
}


class RecordJsonSchema(GenerateJsonSchema):
    """pydantic's generator without titles on properties and without defaults: the files describe
    records as written (the descriptions say what an absent key means), and a ``"default": null``
    would contradict a key a record may leave out but never writes as null (``Omittable``)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])


def _tidy(node: Any) -> Any:
    """The published ``$defs`` names in every ``$ref``, and pydantic's spellings in the shorter
    equivalent ones consumers (and the http agent's schema, which shares the action) read:
    ``{"type": ["string", "null"]}`` for ``{"anyOf": [{"type": "string"}, {"type": "null"}]}``,
    no ``"additionalProperties": true`` (the default),
    ``{"enum": ["a", "b", null]}`` for the nullable enum, and no ``"type": "string"`` beside a
    ``const`` or an ``enum`` of strings."""
    if isinstance(node, list):
        return [_tidy(value) for value in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
            value = "#/$defs/" + _def_name(value.removeprefix("#/$defs/"))
        out[key] = _tidy(value)
    if out.get("additionalProperties") is True:
        del out["additionalProperties"]  # the default
    if out.get("type") == "string" and (isinstance(out.get("const"), str) or (
            isinstance(out.get("enum"), list) and all(isinstance(v, str) for v in out["enum"]))):
        del out["type"]
    branches = out.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches and "type" not in out:
        (other,) = [b for b in branches if b != {"type": "null"}]
        if isinstance(other.get("type"), str) and not (set(other) & (_APPLY_TO_NULL | set(out))):
            # The other keywords (minimum, items, ...) ignore a null, so they can sit beside it.
            del out["anyOf"]
            out.update(other, type=[other["type"], "null"])
        elif set(other) == {"enum"} and "enum" not in out:
            del out["anyOf"]
            out["enum"] = [*other["enum"], None]
    return out


#: Keywords that constrain a null instance too, so they cannot move out of their anyOf branch.
_APPLY_TO_NULL = {"enum", "const", "$ref", "anyOf", "oneOf", "allOf", "not", "if"}


def _def_name(name: str) -> str:
    if name not in DEF_NAMES:
        raise KeyError(f"model {name} has no published $defs name: add it to record/schemas.py DEF_NAMES")
    return DEF_NAMES[name]


def record_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of one record kind (``result``, ``trajectory``, ``manifest``, ``summary``)."""
    from pytest_agentbench.record.models import RECORD_MODELS

    model = RECORD_MODELS[kind]
    # Serialization mode: the schema describes what the writers write (every field of a criterion,
    # say), by_alias: the ``schema`` key (the models' ``record_schema`` field).
    generated = model.model_json_schema(by_alias=True, mode="serialization", schema_generator=RecordJsonSchema)
    # Definitions go untitled (their descriptions name the Python class they come from).
    defs = {_def_name(name): _tidy({k: v for k, v in value.items() if k != "title"})
            for name, value in generated.pop("$defs", {}).items()}
    out: dict[str, Any] = {"$schema": DRAFT, "$id": f"urn:pytest-agentbench:schema:{kind}.schema.json",
                           "title": generated.pop("title"), "description": generated.pop("description")}
    out.update(_tidy(generated))
    if defs:
        out["$defs"] = dict(sorted(defs.items()))
    return out


def schema_text(kind: str) -> str:
    return json.dumps(record_schema(kind), indent=2, ensure_ascii=False) + "\n"


def schema_path(kind: str, folder: Path = SCHEMA_DIR) -> Path:
    return folder / f"{kind}.schema.json"


def stale(folder: Path = SCHEMA_DIR) -> list[Path]:
    """The shipped files that differ from what the models generate (missing ones included)."""
    from pytest_agentbench.record.models import RECORD_MODELS

    out = []
    for kind in RECORD_MODELS:
        path = schema_path(kind, folder)
        if not path.is_file() or path.read_text(encoding="utf-8") != schema_text(kind):
            out.append(path)
    return out


def write_schemas(folder: Path = SCHEMA_DIR) -> list[Path]:
    """Write every ``<kind>.schema.json`` into ``folder``; return the paths written."""
    from pytest_agentbench.record.models import RECORD_MODELS

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in RECORD_MODELS:
        path = schema_path(kind, folder)
        path.write_text(schema_text(kind), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the schema files from the models")
    parser.add_argument("--check", action="store_true", help="only report files that are out of date, exit 1 "
                        "(what the command does without --write; kept for scripts that pass it)")
    parser.add_argument("--dir", type=Path, default=SCHEMA_DIR, help="where the schema files are (default: shipped)")
    args = parser.parse_args(argv)
    if args.write and args.check:
        parser.error("--write and --check exclude each other")
    if not args.write:
        out_of_date = stale(args.dir)
        for path in out_of_date:
            print(f"{path} is out of date: run python -m pytest_agentbench.record.schemas --write", file=sys.stderr)
        return 1 if out_of_date else 0
    for path in write_schemas(args.dir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
