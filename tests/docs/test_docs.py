"""The documentation: README.md (the front door) and the mkdocs site under docs/.

Cheap checks run by default: README's length, the fences' languages, every Python block
compiles, every page is in the site's navigation, every public name of ``keras_rnncells``
and ``keras_rnncells.export`` has an entry in the API reference, and the CLI reference
renders every command. The slow tier runs every page's blocks as a reader would
(`test_every_block_of_a_page_runs_as_written`).

Fences and what runs them:

- ```` ```python ````: run by the slow test, page by page in order, the blocks of one page in
  one namespace, in a fresh process started in a fresh temporary directory;
- ```` ```bash ````: shell commands run by the same test, in its place among the page's
  blocks, in the same directory;
- ```` ```console ```` and ```` ```text ````: illustrative, not run (commands that train for
  minutes or hours, need a cluster or a server, and outputs);
- README.md's Set-up block (a bare fence, which .ci/run parses): the main job, which CI runs
  as a newcomer does, and the test command.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
MAX_README_LINES = 300
RUN = {"python", "bash"}
ILLUSTRATIVE = {"console", "text"}
FENCE = re.compile(r"^```(\S*)\s*$")
# Pages whose blocks start where README's Set-up leaves a reader: the checkout's root, after
# `rnncells quickstart` (its exports in ./rnncells-quickstart/). The test runs the quickstart
# first, with one epoch (the blocks read the exports, whatever their quality).
AFTER_SETUP = {"docs/apps-and-serving.md": ["rnncells", "quickstart", "--epochs", "1"]}


def pages() -> list[Path]:
    """README.md and every page of the site (the API and CLI references hold no code)."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def blocks(page: Path) -> list[tuple[str, str, int]]:
    """The fenced blocks of ``page``: (language, code, line of the fence), in order."""
    found, language, start, lines = [], None, 0, []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE.match(line)
        if language is None and match:
            language, start, lines = match.group(1), number, []
        elif language is not None and line.strip() == "```":
            found.append((language, "\n".join(lines) + "\n", start))
            language = None
        elif language is not None:
            lines.append(line)
    assert language is None, f"{page}: the fence at line {start} is never closed"
    return found


def name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_readme_is_the_front_door_at_most_300_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"
    text = "\n".join(lines)
    for page in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / page).is_file(), f"README.md links {page}, which does not exist"


def test_readme_setup_block_is_what_ci_parses() -> None:
    """The bare fence after '## Set-up' holds the main job and the test command (.ci/run)."""
    setup = README.read_text(encoding="utf-8").split("## Set-up", 1)[1]
    block = re.search(r"```\n(.*?)```", setup, re.DOTALL)
    assert block is not None
    lines = block.group(1).splitlines()
    assert [line for line in lines if "# the main job" in line] == [
        'pip install -e ".[apps]" && rnncells quickstart        # the main job'
    ]
    assert any("python -m pytest -q" in line and "# the tests" in line for line in lines)


@pytest.mark.parametrize("page", pages(), ids=name)
def test_every_fence_says_whether_it_runs(page: Path) -> None:
    setup_fence = None
    if page == README:  # the Set-up block stays bare: .ci/run finds it by its bare fence
        text = README.read_text(encoding="utf-8")
        setup_fence = text[: text.index("## Set-up")].count("\n") + 1
    for language, code, line in blocks(page):
        if language == "" and setup_fence is not None and line > setup_fence:
            setup_fence = None  # only the first bare fence after the heading
            continue
        assert language in RUN | ILLUSTRATIVE, (
            f"{name(page)}:{line}: fence it as one of {sorted(RUN | ILLUSTRATIVE)}, "
            f"not {language!r}"
        )
        if language == "python":
            compile(code, f"{name(page)}:{line}", "exec")


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS.rglob("*.md"):
        assert str(page.relative_to(DOCS)) in nav, f"mkdocs.yml's nav lacks {page}"


def api_entries() -> set[str]:
    """The objects the API reference pages render (``::: path`` lines)."""
    entries = set()
    for page in (DOCS / "reference").glob("api-*.md"):
        entries |= set(re.findall(r"^::: (\S+)$", page.read_text(encoding="utf-8"), re.M))
    return entries


def test_every_public_name_has_an_entry_in_the_api_reference() -> None:
    import keras_rnncells
    import keras_rnncells.export

    entries = api_entries()
    public = [f"keras_rnncells.{n}" for n in keras_rnncells.__all__]
    public += [f"keras_rnncells.export.{n}" for n in keras_rnncells.export.__all__]
    missing = [n for n in public if n not in entries]
    assert not missing, f"run `python tools/make_api_pages.py`: no API entry for {missing}"
    for module in ("seq2seq", "text", "tree", "apps"):
        names = getattr(keras_rnncells, module).__all__
        missing = [n for n in names if f"keras_rnncells.{module}.{n}" not in entries]
        assert not missing, f"keras_rnncells.{module}: no API entry for {missing}"


def test_the_cli_reference_is_rendered_from_every_parser() -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import docs_hooks
    finally:
        sys.path.remove(str(ROOT / "tools"))
    from keras_rnncells.cli import COMMANDS

    assert docs_hooks.CLI_MARKER in (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    rendered = docs_hooks.cli_reference()
    assert "usage: rnncells [-h] command ..." in rendered
    for command in COMMANDS:
        assert f"## `rnncells {command}`" in rendered
        assert f"usage: rnncells {command} " in rendered
    assert "--key-file" in rendered and "--strategy" in rendered  # flags of export, train


# -- every block runs as written ---------------------------------------------------------
# One child process per page: its Python blocks share one namespace, its bash blocks run in
# their place, all from a fresh temporary directory.
DRIVER = textwrap.dedent(
    """
    import json, subprocess, sys
    namespace = {"__name__": "__main__"}
    for language, code, where in json.loads(sys.argv[1]):
        print(f"--- {where} ({language})", flush=True)
        if language == "python":
            exec(compile(code, where, "exec"), namespace)
        else:
            subprocess.run(["bash", "-euo", "pipefail", "-c", code], check=True)
        sys.stdout.flush()
    """
)


def runnable_pages() -> list[Path]:
    return [p for p in pages() if any(lang in RUN for lang, _, _ in blocks(p))]


@pytest.mark.slow
@pytest.mark.parametrize("page", runnable_pages(), ids=name)
def test_every_block_of_a_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    from keras_rnncells.data import data_root

    environ = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    try:
        environ["RNNCELLS_DATA"] = str(data_root())
    except FileNotFoundError:
        pass  # pages that read no data run without it
    if name(page) in AFTER_SETUP:
        done = subprocess.run(
            AFTER_SETUP[name(page)], cwd=tmp_path, env=environ, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-3000:]
    runnable = [
        (language, code, f"{name(page)}:{line}")
        for language, code, line in blocks(page)
        if language in RUN
    ]
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(runnable)],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-5000:])
    assert done.stdout.count("--- ") == len(runnable)
