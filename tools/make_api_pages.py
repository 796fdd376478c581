"""Writes the API reference pages of the documentation site (``docs/reference/api-*.md``):
one mkdocstrings entry per public name of ``keras_rnncells`` and ``keras_rnncells.export``
(their ``__all__``), grouped by topic. Run it after adding a public name:
``python tools/make_api_pages.py``; ``tests/docs/test_docs.py`` checks that every
public name has its entry."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reference"
SUBPACKAGES = ("seq2seq", "text", "tree", "apps")
TRAINING = (
    "NormStabilizer",
    "TemporalCoherence",
    "norm_stabilizer",
    "temporal_coherence",
    "TokenCrossEntropy",
    "TokenLossMean",
    "VocabularySoftmax",
    "start_at_unigram",
    "reestimate_batch_norm",
    "register_operation",
    "PointerDecoder",
    "PointerSorter",
    "SetEncoder",
)


def entry(path: str) -> str:
    """The mkdocstrings block of one object."""
    return f"::: {path}\n"


def page(title: str, intro: str, paths: list[str]) -> str:
    """A reference page: its title, a sentence, then one entry per object."""
    return f"# {title}\n\n{intro}\n\n" + "\n".join(entry(p) for p in paths)


def pages() -> dict[str, str]:
    """The pages, by file name."""
    import keras_rnncells
    import keras_rnncells.export
    from keras_rnncells import cells, layers

    top = [n for n in keras_rnncells.__all__]
    written = {
        "api-cells.md": page(
            "Cells",
            "Every cell of `keras_rnncells` (`keras_rnncells.cells`): equations, citation "
            "and weight layout in each docstring; the registry (`get_cell`, `list_cells`, "
            "`register_cell`) and the pieces a cell of your own is built from.",
            [f"keras_rnncells.{n}" for n in cells.__all__],
        ),
        "api-layers.md": page(
            "Layers",
            "`RNN`, the named layers (`RNN` over their cell), stacks, cells of cells, wrappers "
            "and the grid, document, memory and word-input layers (`keras_rnncells.layers`).",
            [f"keras_rnncells.{n}" for n in layers.__all__],
        ),
        "api-training.md": page(
            "Regularizers, losses, output layers and sets",
            "Penalties, the language models' token metrics, the large-vocabulary softmax, "
            "recurrent batch norm's re-estimation, MuFuRU's operation registry and the set "
            "layers.",
            [f"keras_rnncells.{n}" for n in TRAINING],
        ),
    }
    for name in SUBPACKAGES:
        module = getattr(keras_rnncells, name)
        written[f"api-{name}.md"] = (
            f"# `keras_rnncells.{name}`\n\n"
            f"::: keras_rnncells.{name}\n    options:\n      members: false\n\n"
            + "\n".join(entry(f"keras_rnncells.{name}.{n}") for n in module.__all__)
        )
    written["api-export.md"] = (
        "# `keras_rnncells.export`\n\n"
        "::: keras_rnncells.export\n    options:\n      members: false\n\n"
        + "\n".join(entry(f"keras_rnncells.export.{n}") for n in keras_rnncells.export.__all__)
    )
    listed = set(cells.__all__) | set(layers.__all__) | set(TRAINING) | set(SUBPACKAGES)
    missing = [n for n in top if n not in listed]
    if missing:
        raise SystemExit(f"tools/make_api_pages.py: place these names in a page: {missing}")
    return written


def main() -> None:
    """Writes the pages."""
    DOCS.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        (DOCS / name).write_text(text, encoding="utf-8")
        print(DOCS / name)


if __name__ == "__main__":
    main()
