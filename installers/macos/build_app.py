"""Build volee.app and volee-X.dmg on macOS (UNTESTED: no Mac here; see installers/macos/README).

    python installers/macos/build_app.py dist/volee_desktop-X-py3-none-any.whl \\
        --python-prefix "$(dirname "$(dirname "$(uv python find 3.12)")")" --out dist

The interpreter goes inside the bundle, at ``Contents/MacOS/python3`` with its standard
library in ``Contents/lib`` (a relocatable python-build-standalone build, as ``uv python
install`` fetches): hooks and hosts run ``sys.executable -I -S`` and find it there, and the
process runs from ``Contents/MacOS``, so macOS sees the bundle id and shows notifications.
``Contents/MacOS/volee`` is a shell launcher (the bundle's executable); ``LSUIElement`` keeps
volee out of the Dock (a tray app). Never a login item (ADR 0024).
"""

from __future__ import annotations

import argparse
import email
import os
import plistlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUNDLE_ID = "com.volee.desktop"  # the LaunchAgent's label (launchd/) is the same
MIN_MACOS = "11.0"
ICONSET = ((16, 1), (16, 2), (32, 1), (32, 2), (128, 1), (128, 2), (256, 1), (256, 2), (512, 1))

LAUNCHER = """\
#!/bin/sh
# volee.app's executable: the bundle's own Python runs volee (no argument: the tray app).
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/python3" -m volee_desktop.cli "$@"
"""


def info_plist(version: str) -> dict[str, object]:
    return {
        "CFBundleName": "volee",
        "CFBundleDisplayName": "volee",
        "CFBundleIdentifier": BUNDLE_ID,
        "CFBundleExecutable": "volee",
        "CFBundleIconFile": "volee.icns",
        "CFBundlePackageType": "APPL",
        "CFBundleShortVersionString": version,
        "CFBundleVersion": version,
        "CFBundleInfoDictionaryVersion": "6.0",
        "LSMinimumSystemVersion": MIN_MACOS,
        "LSUIElement": True,  # a menu-bar (tray) app: no Dock icon, no menu bar of its own
        "NSHighResolutionCapable": True,
        "NSHumanReadableCopyright": "the volee desktop authors",
    }


def wheel_version(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (meta,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return str(email.message_from_bytes(archive.read(meta))["Version"])


def lay_out(app: Path, python_prefix: Path, version: str) -> Path:
    """The bundle's folders with the interpreter in place; Contents/MacOS/python3."""
    contents = app / "Contents"
    macos = contents / "MacOS"
    if app.exists():
        shutil.rmtree(app)
    macos.mkdir(parents=True)
    (contents / "Resources").mkdir()
    # bin/ becomes Contents/MacOS, lib/ stays beside it: python3 finds its prefix (Contents)
    # from its own location, and @executable_path/../lib still holds libpython.
    for entry in (python_prefix / "bin").iterdir():
        if entry.name.startswith("python3"):
            shutil.copy2(entry, macos / entry.name, follow_symlinks=False)
    shutil.copytree(python_prefix / "lib", contents / "lib", symlinks=True)
    with (contents / "Info.plist").open("wb") as f:
        plistlib.dump(info_plist(version), f)
    launcher = macos / "volee"
    launcher.write_text(LAUNCHER)
    launcher.chmod(0o755)
    return macos / "python3"


def icns(app: Path, work: Path) -> None:
    """Contents/Resources/volee.icns from resources/volee.svg (Qt renders, iconutil packs)."""
    iconset = work / "volee.iconset"
    iconset.mkdir(parents=True, exist_ok=True)
    sizes = sorted({size * scale for size, scale in ICONSET})
    render = (
        "import sys; from pathlib import Path; from volee_desktop.app import desktopentry as d\n"
        "out = Path(sys.argv[1])\n"
        "for size, data in d.render_pngs(d.source_svg(), tuple(int(a) for a in sys.argv[2:]))"
        ".items():\n"
        "    (out / f'{size}.png').write_bytes(data)\n"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    subprocess.run(
        [sys.executable, "-c", render, str(work), *map(str, sizes)], cwd=ROOT, env=env, check=True
    )
    for size, scale in ICONSET:
        suffix = "" if scale == 1 else "@2x"
        shutil.copy2(work / f"{size * scale}.png", iconset / f"icon_{size}x{size}{suffix}.png")
    target = app / "Contents" / "Resources" / "volee.icns"
    subprocess.run(["iconutil", "-c", "icns", "-o", str(target), str(iconset)], check=True)


def dmg(app: Path, out: Path, version: str) -> Path:
    staging = out / "dmg"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    shutil.copytree(app, staging / app.name, symlinks=True)
    (staging / "Applications").symlink_to("/Applications")
    target = out / f"volee-{version}.dmg"
    subprocess.run(
        [
            *("hdiutil", "create", "-volname", "volee", "-srcfolder", str(staging)),
            *("-ov", "-format", "UDZO", str(target)),
        ],
        check=True,
    )
    shutil.rmtree(staging)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, help="volee's wheel (python -m build)")
    parser.add_argument(
        "--python-prefix",
        type=Path,
        required=True,
        help="a relocatable Python (python-build-standalone; `uv python install 3.12`)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where volee.app goes")
    parser.add_argument("--no-dmg", action="store_true", help="stop after volee.app")
    args = parser.parse_args(argv)
    if sys.platform != "darwin":
        print("build_app.py runs on macOS (iconutil, hdiutil)", file=sys.stderr)
        return 2
    version = wheel_version(args.wheel)
    app = args.out / "volee.app"
    python = lay_out(app, args.python_prefix, version)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-warn-script-location", str(args.wheel)],
        check=True,
    )
    # pip's console scripts (in Contents/bin, the prefix's) name the build's path in their
    # shebang; Contents/MacOS/volee is the bundle's launcher instead.
    shutil.rmtree(app / "Contents" / "bin", ignore_errors=True)
    icns(app, args.out / "iconwork")
    # The bundle's own interpreter runs volee, and the launcher too.
    subprocess.run([str(python), "-I", "-S", "-c", "import sys; print(sys.prefix)"], check=True)
    subprocess.run([str(app / "Contents" / "MacOS" / "volee"), "--version"], check=True)
    # Ad-hoc signature: macOS then accepts the bundle id for notifications on this Mac
    # (a Developer ID signature and notarisation are needed to hand it to others).
    subprocess.run(["codesign", "--force", "--deep", "--sign", "-", str(app)], check=True)
    print(app)
    if not args.no_dmg:
        print(dmg(app, args.out, version))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
