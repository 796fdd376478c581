"""mkdocs hooks of the documentation site (``mkdocs.yml`` names this file).

- The CLI reference: a page holding the marker ``<!-- rnncells-cli -->`` gets
  the help of ``rnncells`` and of each subcommand, rendered from the argparse
  parsers of `keras_rnncells.cli.build_parser` at build time, so it cannot
  drift from the command.
- The plots: every PNG (and HTML view) under ``results/`` that git tracks is added to the site
  at the same path (``results/...png``), so the pages link the committed plots
  without copies in ``docs/``.
- Docstrings are reStructuredText-flavoured: the ``.. math::`` line that
  introduces an equation block (rendered as code) is dropped from the HTML.
"""

from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
CLI_MARKER = "<!-- rnncells-cli -->"
HELP_WIDTH = "88"


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subparsers of ``parser``, by name, in the order the command lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_reference() -> str:
    """Markdown of ``rnncells --help`` and of ``rnncells COMMAND --help`` for each command."""
    from keras_rnncells.cli import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH  # argparse wraps to $COLUMNS
    try:
        parser = build_parser()
        sections = [f"## `rnncells`\n\n```text\n{parser.format_help().rstrip()}\n```\n"]
        for name, subparser in subcommands(parser).items():
            sections.append(
                f"## `rnncells {name}`\n\n```text\n{subparser.format_help().rstrip()}\n```\n"
            )
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    return "\n".join(sections)


def tracked_plots() -> list[str]:
    """The PNG files under ``results/`` that git tracks, relative to the root."""
    listed = subprocess.run(
        ["git", "ls-files", "results"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    names = listed.stdout.splitlines() if listed.returncode == 0 else []
    if not names:  # not a git checkout (a source archive): what the folder holds
        names = [str(p.relative_to(ROOT)) for p in (ROOT / "results").rglob("*") if p.is_file()]
    return sorted(n for n in names if n.endswith((".png", ".html")) and "/runs/" not in n)


def on_files(files, config):
    """Adds the tracked plots of ``results/`` to the site."""
    for name in tracked_plots():
        if (ROOT / name).is_file() and files.get_file_from_path(name) is None:
            files.append(
                File(
                    name,
                    src_dir=str(ROOT),
                    dest_dir=config["site_dir"],
                    use_directory_urls=config["use_directory_urls"],
                )
            )
    return files


def on_page_markdown(markdown, page, config, files):
    """Renders the CLI reference where its marker stands."""
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return markdown


def on_page_content(html, page, config, files):
    """Drops the reStructuredText ``.. math::`` directive lines of docstrings."""
    return html.replace("<p>.. math::</p>", "")
