"""``python -m pytest_agentbench.benches.mockmed serve``: run MockMed for a person to click through."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

from pytest_agentbench.benches.mockmed.app import CONDITIONS, serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_agentbench.benches.mockmed",
                                     description="MockMed, the synthetic medical-records app "
                                                 "of the UI-change benchmark.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("serve", help="serve MockMed on 127.0.0.1 until Ctrl-C")
    run.add_argument("--port", type=int, default=0, help="port to listen on (default: 0, any free port)")
    run.add_argument("--condition", default="clean", choices=CONDITIONS,
                     help="UI condition: %(choices)s (default: clean)")
    run.add_argument("--db", type=Path, default=None,
                     help="SQLite file for the records (default: a new temporary file)")
    args = parser.parse_args(argv)

    db = args.db
    made: Path | None = None  # the temporary folder this command made, removed when it stops
    if db is None:
        made = Path(tempfile.mkdtemp(prefix="mockmed-"))
        db = made / "mockmed.sqlite3"
    server = serve(db, condition=args.condition, port=args.port)
    stop = threading.Event()

    def _terminate(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _terminate)
    print(f"MockMed ({args.condition}) running at {server.url}", flush=True)
    print(f"records: {db}", flush=True)
    print("Sign in with any username and password. Press Ctrl-C to stop.", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
    print("MockMed stopped." + (" Its temporary records were deleted; keep them with --db FILE." if made else ""),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
