"""Regenerate the Python code of the workcoord API from ``protos/``.

Usage (from anywhere in the repository)::

    uv run python scripts/gen_protos.py

What it does, in order:

1. Copies the ``google/api`` and ``google/rpc`` protos shipped inside the
   googleapis-common-protos wheel into ``.build/third_party/`` (gitignored), so ``buf``
   resolves our imports offline, from the very same files the runtime package was built
   from, instead of asking the remote Buf Schema Registry.
2. Runs grpcio-tools' bundled ``protoc`` over our own files only
   (``protos/workcoord/**/*.proto``) with ``--python_out``, ``--pyi_out``,
   ``--grpc_python_out`` and mypy-protobuf's ``--mypy_grpc_out`` (typed stubs for the
   ``*_pb2_grpc`` modules). Google's modules are NOT generated: at run time they come from
   the googleapis-common-protos and protobuf packages.
3. Replaces the previously generated files in ``libs/api/src`` with the new ones, so a
   deleted ``.proto`` leaves no stale module behind, and makes sure the regular packages
   ``workcoord.api`` and ``workcoord.api.v1`` have an ``__init__.py`` (``workcoord`` itself
   stays a PEP 420 namespace shared by several distributions: never give it one).

The output is deterministic: inputs are sorted, paths are passed relative to ``protos/``,
and the generated files depend only on the protos and the locked tool versions, so running
it twice gives identical files. ``.ci/run`` relies on that to fail when the committed code is
stale.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
# Our own packages under protos/; everything found below them is generated.
OWN_PROTO_PACKAGES = ("workcoord",)
OUTPUT_ROOT = ROOT / "libs" / "api" / "src"
# Regular packages that must carry an __init__.py. "workcoord" is deliberately absent.
REGULAR_PACKAGES = ("workcoord/api", "workcoord/api/v1")
THIRD_PARTY_ROOT = ROOT / ".build" / "third_party"
# Directories of googleapis-common-protos copied for buf (recursively, *.proto only).
THIRD_PARTY_PROTO_DIRS = ("google/api", "google/rpc")
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi", ".binpb")


def _package_proto_root(module: str, levels_up: int) -> Path:
    """Return the directory that holds a package's ``.proto`` include tree."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise SystemExit(f"gen_protos: cannot find {module}; run `uv sync` first")
    return Path(spec.origin).resolve().parents[levels_up]


def _googleapis_root() -> Path:
    # google/api/annotations_pb2.py -> site-packages (the dir that holds google/api/*.proto)
    root = _package_proto_root("google.api.annotations_pb2", 2)
    if not (root / "google" / "api" / "annotations.proto").is_file():
        raise SystemExit(f"gen_protos: googleapis-common-protos ships no .proto files in {root}")
    return root


def _grpc_tools_include() -> Path:
    # grpc_tools/__init__.py -> grpc_tools/_proto (google/protobuf/*.proto)
    return _package_proto_root("grpc_tools", 0) / "_proto"


def _find_plugin(name: str) -> Path:
    """Find a protoc plugin installed in the same environment as this interpreter."""
    candidate = Path(sys.executable).parent / name
    if candidate.is_file():
        return candidate
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"gen_protos: {name} not found; is mypy-protobuf installed (uv sync)?")
    return Path(found)


def _own_protos() -> list[str]:
    files = sorted(
        path.relative_to(PROTO_ROOT).as_posix()
        for package in OWN_PROTO_PACKAGES
        for path in (PROTO_ROOT / package).rglob("*.proto")
    )
    if not files:
        raise SystemExit(f"gen_protos: no .proto files under {PROTO_ROOT}")
    return files


def copy_third_party(googleapis_root: Path) -> int:
    """Mirror google/api and google/rpc protos into .build/third_party for buf."""
    if THIRD_PARTY_ROOT.exists():
        shutil.rmtree(THIRD_PARTY_ROOT)
    copied = 0
    for rel_dir in THIRD_PARTY_PROTO_DIRS:
        for source in sorted((googleapis_root / rel_dir).rglob("*.proto")):
            target = THIRD_PARTY_ROOT / source.relative_to(googleapis_root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            copied += 1
    return copied


DESCRIPTOR_SET = "workcoord/api/v1/descriptor_set.binpb"


def run_protoc(protos: list[str], out_dir: Path, googleapis_root: Path) -> None:
    """Run grpcio-tools' protoc over our protos, writing every output into out_dir."""
    out = str(out_dir)
    command = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        # Our tree first so our files win; then the well-known types bundled with
        # grpcio-tools; then google/api + google/rpc from googleapis-common-protos.
        f"--proto_path={PROTO_ROOT}",
        f"--proto_path={_grpc_tools_include()}",
        f"--proto_path={googleapis_root}",
        f"--plugin=protoc-gen-mypy_grpc={_find_plugin('protoc-gen-mypy_grpc')}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_grpc_out=quiet:{out}",
        # Comments travel in a descriptor set with source info: the gateway's OpenAPI
        # document takes its summaries and descriptions from it.
        f"--descriptor_set_out={out_dir / DESCRIPTOR_SET}",
        "--include_source_info",
        *protos,
    ]
    # Relative input paths (resolved against --proto_path) keep absolute paths of this
    # machine out of the generated code.
    result = subprocess.run(command, cwd=PROTO_ROOT, check=False)  # noqa: S603
    if result.returncode != 0:
        raise SystemExit(f"gen_protos: protoc failed with exit code {result.returncode}")


def _generated_files(root: Path) -> list[Path]:
    files: list[Path] = []
    for package in OWN_PROTO_PACKAGES:
        base = root / package
        if base.exists():
            files.extend(p for p in base.rglob("*") if p.name.endswith(GENERATED_SUFFIXES))
    return sorted(files)


def install_outputs(staging: Path) -> list[Path]:
    """Replace the generated files under OUTPUT_ROOT by those in staging."""
    for stale in _generated_files(OUTPUT_ROOT):
        stale.unlink()
    written: list[Path] = []
    for source in _generated_files(staging):
        target = OUTPUT_ROOT / source.relative_to(staging)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        written.append(target)
    for package in REGULAR_PACKAGES:
        init = OUTPUT_ROOT / package / "__init__.py"
        if not init.exists():
            init.parent.mkdir(parents=True, exist_ok=True)
            init.write_text("")
            written.append(init)
    namespace_init = OUTPUT_ROOT / "workcoord" / "__init__.py"
    if namespace_init.exists():
        raise SystemExit(
            f"gen_protos: {namespace_init.relative_to(ROOT)} must not exist: "
            "workcoord is a namespace package shared by several distributions"
        )
    return written


def main() -> int:
    googleapis_root = _googleapis_root()
    copied = copy_third_party(googleapis_root)
    protos = _own_protos()
    with tempfile.TemporaryDirectory(prefix="gen_protos.") as tmp:
        staging = Path(tmp)
        run_protoc(protos, staging, googleapis_root)
        written = install_outputs(staging)
    print(f"gen_protos: {len(protos)} proto file(s) -> {OUTPUT_ROOT.relative_to(ROOT)}/")
    for path in written:
        print(f"  {path.relative_to(ROOT)}")
    print(f"gen_protos: {copied} google/api + google/rpc protos -> .build/third_party/ (for buf)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
