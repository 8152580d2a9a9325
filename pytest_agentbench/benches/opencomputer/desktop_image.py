"""Build a small OpenComputer-compatible desktop image from Debian packages, for running
OpenComputer's own Docker backend (``--opencomputer-backend docker``) where its full image
(``gui-synth-env-desktop:latest``, 33 apps, built from vendor downloads) cannot be built.

    python -m pytest_agentbench.benches.opencomputer.desktop_image CHECKOUT [--tag NAME]

Why this shape: OpenComputer's backend starts its image's entrypoint and waits for its
healthcheck's conditions (an X display, ``x11vnc``, ``websockify``), then runs every command as
``user`` (uid 1000) with ``bash -lc``; its setup code and verifiers need ``python3`` with the
image's packages. This image has exactly that stack, from Debian's packages only:

* the base from ``debootstrap --variant=minbase`` imported with ``docker import`` (no registry);
* Xvfb, the XFCE pieces the entrypoint starts (xfwm4, xfsettingsd, xfce4-panel, xfdesktop,
  Thunar), dbus, x11vnc, websockify, scrot, xdotool, xclip, sudo;
* ``python3`` with Pillow, openpyxl, python-docx, lxml, chardet, python-xlib, pyperclip, tkinter
  from Debian, and the pure-Python wheels Debian lacks (pyautogui and its helpers, python-pptx)
  fetched on the host by ``pip wheel`` and installed offline;
* the apps in :data:`APPS` (gedit, pcmanfm, LibreOffice Calc, Inkscape): small ones, so the build takes
  minutes;
* OpenComputer's own ``entrypoint.sh`` and ``healthcheck.sh``, its app-wrapper installer and its
  launcher contract, read from the user's checkout at build time (never copied into this project),
  at the paths its Dockerfile puts them, with its ``ENV``, ``USER``, ``WORKDIR``, ``HEALTHCHECK``
  and ``ENTRYPOINT``.

The image carries the content hash of everything above as the label :data:`HASH_LABEL`; a build
whose hash matches the image already there does nothing (so CI rebuilds only on change). The
debootstrap base is cached the same way under :data:`BASE_NAME`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.benches.opencomputer.container import APPS_LABEL

#: Where the test image is named unless ``--tag`` says otherwise.
DEFAULT_TAG = "agentbench-opencomputer-desktop:latest"
#: The label that holds the content hash of the build inputs.
HASH_LABEL = "org.agentbench.opencomputer-desktop.hash"
#: The label that lists the OpenComputer apps the image holds (comma-separated app ids).
BASE_NAME = "agentbench-debian-minbase"
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
#: OpenComputer app id -> the Debian packages that provide it.
APPS: dict[str, tuple[str, ...]] = {
    "gedit": ("gedit",),
    "pcmanfm": ("pcmanfm",),
    "libreoffice_calc": ("libreoffice-calc", "libreoffice-gtk3", "python3-uno"),
    # OpenComputer launches ``inkscape FILE`` and waits for the process; its verifier parses the
    # SVG with the standard library, so the app alone is enough (no Recommends).
    "inkscape": ("inkscape",),
}
#: The desktop stack OpenComputer's entrypoint and backend use.
DESKTOP_PACKAGES = (
    "bash", "ca-certificates", "dbus", "dbus-x11", "procps", "sudo", "xvfb", "x11-utils", "x11-xserver-utils",
    "xauth", "xfwm4", "xfce4-panel", "xfdesktop4", "xfce4-settings", "thunar", "xfce4-terminal", "x11vnc",
    "websockify", "scrot", "xdotool", "xclip", "xfonts-base", "fonts-dejavu-core", "python3", "python3-pip",
    "python3-tk", "python3-xlib", "python3-pil", "python3-openpyxl", "python3-docx", "python3-lxml",
    "python3-chardet", "python3-pyperclip", "python3-typing-extensions", "libglib2.0-bin",
    "dconf-gsettings-backend", "dconf-service", "at-spi2-core",
)
#: Pure-Python wheels Debian does not ship (pyautogui and its helpers; python-pptx and its
#: XlsxWriter; a typing_extensions new enough for python-pptx), pinned.
WHEELS = (
    "pyautogui==0.9.54", "pymsgbox==2.0.1", "pytweening==1.2.0", "pyscreeze==1.0.1", "pygetwindow==0.0.9",
    "mouseinfo==0.1.3", "pyrect==0.2.0", "python-pptx==1.0.2", "XlsxWriter==3.3.1", "typing_extensions==4.12.2",
)
#: checkout path -> path in the image (as OpenComputer's Dockerfile ``COPY``s them).
CHECKOUT_FILES = {
    "computer_env/provision/docker/entrypoint.sh": "/usr/local/bin/gui-synth-entrypoint.sh",
    "computer_env/provision/docker/healthcheck.sh": "/usr/local/bin/gui-synth-healthcheck.sh",
    "computer_env/provision/docker/install_app_wrappers.py": "/usr/local/bin/gui-synth-install-app-wrappers.py",
    "evaluation/apps/launcher_contract.py": "/usr/local/share/gui-synth/launcher_contract.py",
}

DOCKERFILE = """\
FROM {base}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q && apt-get install -y -q --no-install-recommends {packages} \\
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
COPY wheels /tmp/wheels
RUN python3 -m pip install --no-index --no-deps --break-system-packages --no-compile /tmp/wheels/*.whl \\
    && rm -rf /tmp/wheels
ENV DISPLAY=:0 HOME=/home/user USER=user SHELL=/bin/bash LANG=C.UTF-8 LC_ALL=C.UTF-8 \\
    XDG_RUNTIME_DIR=/tmp/runtime-user
RUN useradd -m -u 1000 -s /bin/bash user && usermod -aG sudo user \\
    && echo "user ALL=(ALL) NOPASSWD:ALL" > /etc/sudoers.d/user && chmod 0440 /etc/sudoers.d/user \\
    && mkdir -p /home/user/Downloads /tmp/runtime-user && chown -R user:user /home/user /tmp/runtime-user
{copies}
RUN chmod +x /usr/local/bin/gui-synth-entrypoint.sh /usr/local/bin/gui-synth-healthcheck.sh \\
    /usr/local/bin/gui-synth-install-app-wrappers.py && python3 /usr/local/bin/gui-synth-install-app-wrappers.py
LABEL {hash_label}="{digest}" {apps_label}="{apps}"
USER user
WORKDIR /home/user
EXPOSE 6080 5900
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=12 CMD ["/usr/local/bin/gui-synth-healthcheck.sh"]
ENTRYPOINT ["/usr/local/bin/gui-synth-entrypoint.sh"]
"""


class BuildError(RuntimeError):
    """The image could not be built; the message is one line saying what to do."""


@dataclass(frozen=True)
class Plan:
    """What one build makes: the Dockerfile text (with its hash label) and the checkout files."""

    tag: str
    base: str
    dockerfile: str
    digest: str
    files: dict[str, bytes]
    apps: tuple[str, ...]


def _docker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise BuildError("the docker command is not installed (Debian: apt-get install docker.io)") from None


def image_label(tag: str, label: str) -> str | None:
    """The image's value for ``label``; None when the image (or the label) is not there."""
    done = _docker("image", "inspect", "--format", "{{json .Config.Labels}}", tag)
    if done.returncode != 0:
        return None
    labels = json.loads(done.stdout or "null") or {}
    value = labels.get(label)
    return value if isinstance(value, str) else None


def plan(checkout: Path, tag: str = DEFAULT_TAG, apps: tuple[str, ...] = tuple(APPS),
         mirror: str = DEFAULT_MIRROR) -> Plan:
    """The build for ``checkout``'s entrypoint and scripts; ``BuildError`` naming a missing file."""
    unknown = [app for app in apps if app not in APPS]
    if unknown:
        raise BuildError(f"unknown app {unknown[0]!r}: this image can hold {', '.join(APPS)}")
    files: dict[str, bytes] = {}
    for rel in CHECKOUT_FILES:
        path = checkout / rel
        if not path.is_file():
            raise BuildError(f"{path} does not exist: CHECKOUT must be an OpenComputer checkout")
        files[rel] = path.read_bytes()
    base_digest = hashlib.sha256(f"{SUITE} minbase {mirror}".encode()).hexdigest()[:16]
    base = f"{BASE_NAME}:{SUITE}-{base_digest}"
    packages = sorted({*DESKTOP_PACKAGES, *(pkg for app in apps for pkg in APPS[app])})
    copies = "\n".join(f"COPY oc/{rel} {inside}" for rel, inside in CHECKOUT_FILES.items())
    hasher = hashlib.sha256()
    hasher.update(json.dumps([base, packages, list(WHEELS), sorted(apps)]).encode())
    for rel in sorted(files):
        hasher.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    template = DOCKERFILE.format(base=base, packages=" ".join(packages), copies=copies, hash_label=HASH_LABEL,
                                 digest="{digest}", apps_label=APPS_LABEL, apps=",".join(sorted(apps)))
    hasher.update(template.encode())
    digest = hasher.hexdigest()
    return Plan(tag=tag, base=base, dockerfile=template.replace("{digest}", digest), digest=digest, files=files,
                apps=tuple(sorted(apps)))


def _run(argv: list[str], what: str, timeout: float, log: Path | None = None, **kwargs: object) -> None:
    """Run a build step, its output in ``log`` (or discarded); ``BuildError`` with the log's tail."""
    with tempfile.TemporaryFile("w+") as out:
        try:
            done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False,
                                  **kwargs)  # type: ignore[call-overload]
        except FileNotFoundError:
            raise BuildError(f"{argv[0]} is not installed (Debian: apt-get install {argv[0]})") from None
        except subprocess.TimeoutExpired:
            raise BuildError(f"{what} took more than {timeout:g} s") from None
        out.seek(0)
        text = out.read()
    if log is not None:
        log.write_text(text)
    if done.returncode != 0:
        tail = " | ".join(line for line in text.strip().splitlines()[-3:])
        raise BuildError(f"{what} failed (exit {done.returncode}): {tail}")


def ensure_base(base: str, mirror: str, work: Path) -> bool:
    """Import the debootstrap base as ``base`` unless it is there; True when it was made."""
    if _docker("image", "inspect", base).returncode == 0:
        return False
    rootfs = work / "rootfs"
    _run(["debootstrap", "--variant=minbase", SUITE, str(rootfs), mirror], "debootstrap", 1800)
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    try:
        _run(["docker", "import", "-", base], "docker import", 600, stdin=tar.stdout)
    finally:
        if tar.stdout is not None:
            tar.stdout.close()
        tar.wait()
    shutil.rmtree(rootfs, ignore_errors=True)
    return True


def fetch_wheels(into: Path) -> None:
    """The pinned wheels, made on the host by pip (the image's pip installs them offline)."""
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q", "-w", str(into),
          *WHEELS], "pip wheel", 600)


def build(checkout: Path, tag: str = DEFAULT_TAG, apps: tuple[str, ...] = tuple(APPS),
          mirror: str = DEFAULT_MIRROR, force: bool = False, say: bool = True) -> tuple[Plan, bool]:
    """Build the image unless one with the same content hash is there; (the plan, whether it built)."""
    wanted = plan(checkout, tag, apps, mirror)
    if not force and image_label(tag, HASH_LABEL) == wanted.digest:
        if say:
            print(f"{tag}: up to date ({wanted.digest[:12]})")
        return wanted, False
    if _docker("version", "--format", "{{.Server.Version}}").returncode != 0:
        raise BuildError("no Docker daemon answers (start dockerd, or set DOCKER_HOST)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="agentbench-oc-image-") as tmp:
        work = Path(tmp)
        if ensure_base(wanted.base, mirror, work) and say:
            print(f"{wanted.base}: imported from debootstrap ({time.monotonic() - started:.0f} s)")
        context = work / "context"
        (context / "wheels").mkdir(parents=True)
        fetch_wheels(context / "wheels")
        for rel, data in wanted.files.items():
            target = context / "oc" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        (context / "Dockerfile").write_text(wanted.dockerfile)
        env = {**os.environ, "DOCKER_BUILDKIT": "0"}
        _run(["docker", "build", "--network", "host", "-t", tag, str(context)], "docker build", 3600,
             log=work / "build.log", env=env)
    if say:
        print(f"{tag}: built ({wanted.digest[:12]}, apps {', '.join(wanted.apps)}) in "
              f"{time.monotonic() - started:.0f} s")
    return wanted, True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_agentbench.benches.opencomputer.desktop_image",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("checkout", type=Path, help="the OpenComputer checkout (its entrypoint and scripts)")
    parser.add_argument("--tag", default=DEFAULT_TAG, help=f"the image name (default {DEFAULT_TAG})")
    parser.add_argument("--apps", default=",".join(APPS), help=f"comma-separated, of {', '.join(APPS)}")
    parser.add_argument("--mirror", default=DEFAULT_MIRROR, help="the Debian mirror debootstrap and apt use")
    parser.add_argument("--force", action="store_true", help="build even when the image is up to date")
    args = parser.parse_args(argv)
    apps = tuple(app.strip() for app in args.apps.split(",") if app.strip())
    try:
        build(args.checkout, args.tag, apps, args.mirror, force=args.force)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
