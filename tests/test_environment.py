"""environment.yml (Binder) and pyproject.toml must declare the same packages.

Every dependency of the runtime, ``notebooks`` and ``test`` extras must be pinned in
environment.yml's pip section with an exact version that satisfies pyproject's
specifier; environment.yml must pin nothing pyproject does not declare; and it must
install memlib itself. The YAML is parsed by hand (it is a flat, simple file), so this
test needs no YAML library.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
EXTRAS_IN_ENVIRONMENT = ("notebooks", "test")
SELF_INSTALL = {"-e .", ".", "-e ./", "./"}


def parse_environment_yml(text: str) -> dict:
    """Return {"conda": [...], "pip": [...]} from a simple conda environment.yml."""
    conda: list[str] = []
    pip: list[str] = []
    section = None  # None | "dependencies" | "pip"
    pip_indent = None
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        if indent == 0:
            section = "dependencies" if stripped == "dependencies:" else None
            continue
        if section is None:
            continue
        if section == "pip" and indent <= pip_indent:
            section = "dependencies"
        if section == "dependencies" and stripped == "- pip:":
            section, pip_indent = "pip", indent
            continue
        if not stripped.startswith("- "):
            raise ValueError(f"unexpected line in environment.yml: {raw!r}")
        item = stripped[2:].strip().strip("'\"")
        (pip if section == "pip" else conda).append(item)
    return {"conda": conda, "pip": pip}


def declared_requirements(pyproject: dict, python_version: str) -> list[Requirement]:
    """Runtime + notebooks + test requirements that apply on ``python_version``."""
    project = pyproject["project"]
    lines = list(project.get("dependencies", []))
    for extra in EXTRAS_IN_ENVIRONMENT:
        lines += project["optional-dependencies"][extra]
    env = {"python_version": python_version, "python_full_version": python_version + ".0"}
    reqs: dict[str, Requirement] = {}
    for line in lines:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        name = canonicalize_name(req.name)
        if name in reqs:  # listed in two extras: both specifiers must hold
            req.specifier = req.specifier & reqs[name].specifier
        reqs[name] = req
    return list(reqs.values())


def problems(pyproject: dict, environment_text: str) -> list[str]:
    """Every way the two files disagree, as readable messages (empty list: in step)."""
    env = parse_environment_yml(environment_text)
    out: list[str] = []

    pythons = [d for d in env["conda"] if re.fullmatch(r"python\s*[=<>!]=?.*", d)]
    if len(pythons) != 1:
        return out + [f"environment.yml must pin python exactly once, found {pythons!r}"]
    python_version = re.sub(r"^python\s*=+\s*", "", pythons[0])
    requires_python = SpecifierSet(pyproject["project"].get("requires-python", ""))
    if Version(python_version) not in requires_python:
        out.append(f"python={python_version} does not satisfy requires-python {requires_python}")

    if not any(item in SELF_INSTALL for item in env["pip"]):
        out.append("environment.yml does not install the package itself ('-e .' under pip)")

    pinned: dict[str, str] = {}
    for item in env["pip"]:
        if item in SELF_INSTALL:
            continue
        req = Requirement(item)
        specs = list(req.specifier)
        if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
            out.append(f"environment.yml pin {item!r} is not an exact '==' pin")
            continue
        pinned[canonicalize_name(req.name)] = specs[0].version

    declared = declared_requirements(pyproject, python_version)
    for req in declared:
        name = canonicalize_name(req.name)
        if name not in pinned:
            out.append(f"{req.name} is declared in pyproject.toml but missing from environment.yml")
        elif not req.specifier.contains(pinned[name], prereleases=True):
            out.append(
                f"{req.name}=={pinned[name]} in environment.yml does not satisfy "
                f"pyproject.toml's {req.name}{req.specifier}"
            )
    declared_names = {canonicalize_name(r.name) for r in declared}
    for name in sorted(set(pinned) - declared_names):
        out.append(f"{name} is pinned in environment.yml but not declared in pyproject.toml")
    return out


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def environment_text() -> str:
    return (ROOT / "environment.yml").read_text(encoding="utf-8")


def test_environment_matches_pyproject(pyproject, environment_text):
    assert problems(pyproject, environment_text) == []


def test_runtime_dependency_is_numpy_only(pyproject):
    names = [canonicalize_name(Requirement(r).name) for r in pyproject["project"]["dependencies"]]
    assert names == ["numpy"]


def test_test_extra_carries_notebook_extra(pyproject):
    # nbval executes the notebooks, so `pip install .[test]` must bring their packages.
    extras = pyproject["project"]["optional-dependencies"]
    test = {canonicalize_name(Requirement(r).name) for r in extras["test"]}
    notebooks = {canonicalize_name(Requirement(r).name) for r in extras["notebooks"]}
    assert notebooks <= test


# --- the checker itself catches drift ------------------------------------------------------
def _with_extra_dependency(pyproject: dict, line: str) -> dict:
    copy = {**pyproject, "project": {**pyproject["project"]}}
    copy["project"]["dependencies"] = [*pyproject["project"]["dependencies"], line]
    return copy


def test_detects_dependency_added_to_pyproject_only(pyproject, environment_text):
    found = problems(_with_extra_dependency(pyproject, "scipy>=1.10"), environment_text)
    assert any("scipy" in p and "missing" in p for p in found)


def test_detects_dependency_added_to_environment_only(pyproject, environment_text):
    text = environment_text.replace("      - -e .", "      - scipy==1.14.0\n      - -e .")
    assert text != environment_text
    assert any("scipy" in p and "not declared" in p for p in problems(pyproject, text))


def test_detects_pin_outside_specifier(pyproject, environment_text):
    text = re.sub(r"numpy==[\w.]+", "numpy==1.0.0", environment_text)
    assert any("numpy==1.0.0" in p for p in problems(pyproject, text))


def test_detects_missing_self_install(pyproject, environment_text):
    text = environment_text.replace("      - -e .\n", "")
    assert any("package itself" in p for p in problems(pyproject, text))


def test_detects_loose_pin(pyproject, environment_text):
    text = re.sub(r"pytest==[\w.]+", "pytest>=8", environment_text)
    assert any("exact" in p for p in problems(pyproject, text))


def test_parser_reads_pip_section():
    env = parse_environment_yml(
        "name: x\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.11\n  - pip\n"
        "  - pip:\n      # comment\n      - numpy==2.0.0  # trailing\n      - -e .\n"
    )
    assert env == {"conda": ["python=3.11", "pip"], "pip": ["numpy==2.0.0", "-e ."]}


def test_readme_shows_the_ci_test_command():
    # .ci/run runs .ci/test, whose last line must be the README's test command verbatim.
    ci_command = (ROOT / ".ci" / "test").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert "pytest" in ci_command
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"```bash\n{ci_command}\n```" in readme


# --- the README's first command opens JupyterLab at the repository root ------------------------
def readme_lab_command() -> list[str]:
    """The `jupyter lab ...` part of the README's first command (the Quick start), as arguments."""
    import shlex

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"```bash\n(.+?)\n```", readme, flags=re.S).group(1)
    lab = [part.strip() for part in first.split("&&") if part.strip().startswith("jupyter lab")]
    assert lab, f"the README's first command does not start JupyterLab: {first!r}"
    return shlex.split(lab[0])[2:]


def served_root_and_page(args: list[str], cwd: Path) -> tuple[Path, str]:
    """Which folder jupyter_server serves and which page JupyterLab opens for these arguments
    (jupyter_server 2: a file argument makes its folder the root unless --ServerApp.root_dir says
    otherwise; --LabApp.default_url names the page)."""
    root, page, files = cwd, "/lab", []
    for a in args:
        if a.startswith(("--ServerApp.root_dir=", "--notebook-dir=")):
            root = (cwd / a.split("=", 1)[1]).resolve()
        elif a.startswith("--LabApp.default_url="):
            page = a.split("=", 1)[1]
        elif not a.startswith("-"):
            files.append(a)
    if files and not any(a.startswith(("--ServerApp.root_dir=", "--notebook-dir=")) for a in args):
        root = (cwd / files[0]).resolve().parent
    if files:
        page = "/lab/tree/" + str((cwd / files[0]).resolve().relative_to(root))
    return root, page


def test_readme_first_command_serves_the_repository_root_on_the_index():
    root, page = served_root_and_page(readme_lab_command(), ROOT)
    assert root == ROOT, f"JupyterLab would serve {root}, so the index's links to exercises/ and docs/ break"
    assert page == "/lab/tree/notebooks/index.ipynb" and (ROOT / "notebooks" / "index.ipynb").is_file()
    # the command this replaced served notebooks/ (a file argument makes its folder the root)
    old_root, _ = served_root_and_page(["--allow-root", "notebooks/index.ipynb"], ROOT)
    assert old_root == ROOT / "notebooks"


def test_readme_first_command_really_serves_the_repository_root(tmp_path):
    """Start JupyterLab with the README's arguments (no browser, a free port) and ask its contents API."""
    import json as _json
    import os
    import socket
    import subprocess
    import time
    import urllib.request

    pytest.importorskip("jupyterlab")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "memlib-test"
    args = [a for a in readme_lab_command() if a != "--allow-root"]
    cmd = [sys.executable, "-m", "jupyterlab", *args, "--allow-root", "--no-browser", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}", "--ServerApp.port_retries=0"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path)})
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start: {proc.stdout.read()[-2000:] if proc.stdout else ''}")
                time.sleep(0.5)
        for path in ("exercises", "docs/cheatsheet.md", "notebooks/index.ipynb"):
            with urllib.request.urlopen(f"{base}/api/contents/{path}?content=0&token={token}", timeout=10) as r:
                assert _json.load(r)["path"] == path
        req = urllib.request.Request(f"{base}/?token={token}")
        opener = urllib.request.build_opener(type("NoRedirect", (urllib.request.HTTPRedirectHandler,),
                                                  {"redirect_request": lambda *a, **k: None}))
        try:
            opener.open(req, timeout=10)
            location = ""
        except urllib.error.HTTPError as e:
            location = e.headers.get("Location", "")
        assert location.startswith("/lab/tree/notebooks/index.ipynb"), location
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_licence_is_stated_in_pyproject_readme_and_files(pyproject):
    assert pyproject["project"]["license"] == "MIT AND CC-BY-4.0"
    assert pyproject["project"]["license-files"] == ["LICENSE", "LICENSE-CONTENT"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert "Creative Commons Attribution 4.0 International Public License" in \
        (ROOT / "LICENSE-CONTENT").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "## Licence" in readme and "[LICENSE](LICENSE)" in readme and "[LICENSE-CONTENT](LICENSE-CONTENT)" in readme
