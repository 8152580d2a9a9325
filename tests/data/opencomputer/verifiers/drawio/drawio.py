"""A small draw.io verifier written for pytest-agentbench's tests (not OpenComputer's code).

It follows OpenComputer's verifier CLI contract: ``python3 drawio.py <command> [args...]`` prints
``json.dumps(result, indent=2)`` and exits 0; an unknown command, a missing argument or any other
exception prints ``{"error": ...}`` and exits 1; ``-h``, ``--help`` or ``help`` print usage and
exit 0. Its output shapes are those of the check-result files recorded from OpenComputer's
``verifiers/drawio/drawio.py``. Standard library only.
"""

import base64
import json
import os
import sys
import urllib.parse
import xml.etree.ElementTree as ET
import zlib


def _pages(path):
    root = ET.parse(path).getroot()
    if root.tag == "mxGraphModel":
        return [root]
    pages = []
    for diagram in root.iter("diagram"):
        model = diagram.find("mxGraphModel")
        if model is None and (diagram.text or "").strip():
            raw = zlib.decompress(base64.b64decode(diagram.text.strip()), -15).decode("utf-8")
            model = ET.fromstring(urllib.parse.unquote(raw))
        if model is not None:
            pages.append(model)
    return pages


def _cells(path, page):
    pages = _pages(path)
    index = int(page)
    if not 0 <= index < len(pages):
        raise ValueError(f"page {index} does not exist ({len(pages)} pages)")
    return pages[index].iter("mxCell")


def check_file_exists(path):
    if not os.path.isfile(path):
        return {"exists": False, "valid": False, "page_count": 0}
    try:
        return {"exists": True, "valid": True, "page_count": len(_pages(path))}
    except (ET.ParseError, ValueError, zlib.error):
        return {"exists": True, "valid": False, "page_count": 0}


def check_vertex_count(path, expected, page="0"):
    actual = sum(1 for cell in _cells(path, page) if cell.get("vertex") == "1")
    return {"match": actual == int(expected), "expected": int(expected), "actual": actual}


def check_label_exists(path, label):
    matches = []
    for index, model in enumerate(_pages(path)):
        for cell in model.iter("mxCell"):
            if cell.get("value") == label:
                matches.append({"id": cell.get("id"), "label": label, "page_index": index})
    return {"exists": bool(matches), "matches": matches}


def vertices(path, page="0"):
    out = []
    for cell in _cells(path, page):
        if cell.get("vertex") != "1":
            continue
        geometry = cell.find("mxGeometry")
        out.append({
            "id": cell.get("id"), "value": cell.get("value"), "vertex": True, "edge": False,
            "source": cell.get("source"), "target": cell.get("target"), "style": cell.get("style"),
            "parent": cell.get("parent"), "geometry": dict(geometry.attrib) if geometry is not None else None,
        })
    return out


def connections(path, page="0"):
    return [{"id": c.get("id"), "source": c.get("source"), "target": c.get("target"), "value": c.get("value") or ""}
            for c in _cells(path, page) if c.get("edge") == "1"]


COMMANDS = {
    "check-file-exists": ("check-file-exists PATH", check_file_exists),
    "check-vertex-count": ("check-vertex-count PATH N [PAGE]", check_vertex_count),
    "check-label-exists": ("check-label-exists PATH LABEL", check_label_exists),
    "vertices": ("vertices PATH [PAGE]", vertices),
    "connections": ("connections PATH [PAGE]", connections),
}
REQUIRED = {"check-file-exists": 1, "check-vertex-count": 2, "check-label-exists": 2, "vertices": 1, "connections": 1}


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        print("usage: drawio.py COMMAND [ARGS...]\n" + "\n".join(f"  {usage}" for usage, _ in COMMANDS.values()))
        return 0
    name, args = argv[0], argv[1:]
    if name not in COMMANDS:
        print(json.dumps({"error": f"Unknown command: {name}. Available: {', '.join(COMMANDS)}"}, indent=2))
        return 1
    if len(args) < REQUIRED[name]:
        print(json.dumps({"error": f"Missing required argument for '{name}'"}, indent=2))
        return 1
    try:
        result = COMMANDS[name][1](*args)
    except Exception as exc:  # noqa: BLE001 - the contract: any failure is {"error": ...} with exit 1
        print(json.dumps({"error": str(exc)}, indent=2))
        return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
