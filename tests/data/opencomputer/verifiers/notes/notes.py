"""A verifier for plain text files ("notes"), written for pytest-agentbench's tests.

It follows OpenComputer's verifier CLI contract (see drawio.py next door) and adds two commands
that only tests need: ``wait SECONDS`` sleeps before answering (a checker that hangs) and
``connect HOST PORT`` says whether a TCP connection could be opened (a checker's network access).
Standard library only.
"""

import json
import os
import socket
import sys
import time


def check_file_exists(path):
    return {"exists": os.path.isfile(path), "path": path}


def lines(path):
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle]


def check_line(path, number, text):
    content = lines(path)
    index = int(number) - 1
    actual = content[index] if 0 <= index < len(content) else None
    return {"match": actual == text, "line": int(number), "expected": text, "actual": actual}


def word_count(path):
    content = lines(path)
    return {"lines": len(content), "words": sum(len(line.split()) for line in content)}


def wait(seconds):
    time.sleep(float(seconds))
    return {"waited": float(seconds)}


def connect(host, port):
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return {"connected": True}
    except OSError as exc:
        return {"connected": False, "reason": str(exc)}


COMMANDS = {
    "check-file-exists": ("check-file-exists PATH", check_file_exists, 1),
    "lines": ("lines PATH", lines, 1),
    "check-line": ("check-line PATH N TEXT", check_line, 3),
    "word-count": ("word-count PATH", word_count, 1),
    "wait": ("wait SECONDS", wait, 1),
    "connect": ("connect HOST PORT", connect, 2),
}


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        print("usage: notes.py COMMAND [ARGS...]\n" + "\n".join(f"  {usage}" for usage, _, _ in COMMANDS.values()))
        return 0
    name, args = argv[0], argv[1:]
    if name not in COMMANDS:
        print(json.dumps({"error": f"Unknown command: {name}. Available: {', '.join(COMMANDS)}"}, indent=2))
        return 1
    _, handler, required = COMMANDS[name]
    if len(args) < required:
        print(json.dumps({"error": f"Missing required argument for '{name}'"}, indent=2))
        return 1
    try:
        result = handler(*args)
    except Exception as exc:  # noqa: BLE001 - the contract: any failure is {"error": ...} with exit 1
        print(json.dumps({"error": str(exc)}, indent=2))
        return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
