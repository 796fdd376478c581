"""Writes keras_rnncells/apps/xkcd_colors.tsv, the color list the package ships.

The 949 XKCD color names with their sRGB values, as matplotlib ships them
(``matplotlib._color_data.XKCD_COLORS``, from https://xkcd.com/color/rgb/, CC0),
one ``name<TAB>r<TAB>g<TAB>b`` row each (0-255 integers), sorted by name,
behind a ``#`` header line stating the provenance. Run once from the checkout:
``python tools/make_color_list.py``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
from matplotlib._color_data import XKCD_COLORS

TARGET = Path(__file__).resolve().parents[1] / "keras_rnncells" / "apps" / "xkcd_colors.tsv"


def rows() -> list[str]:
    colors = {key.removeprefix("xkcd:"): value for key, value in XKCD_COLORS.items()}
    return [
        "\t".join([name, *(str(int(hex_rgb[i : i + 2], 16)) for i in (1, 3, 5))])
        for name, hex_rgb in sorted(colors.items())
    ]


def main() -> None:
    header = (
        f"# The {len(XKCD_COLORS)} XKCD color names (xkcd.com/color/rgb, CC0) with sRGB 0-255, "
        f"from matplotlib {matplotlib.__version__} _color_data.XKCD_COLORS; "
        "written by tools/make_color_list.py"
    )
    TARGET.write_text("\n".join([header, "name\tr\tg\tb", *rows()]) + "\n", encoding="utf-8")
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
