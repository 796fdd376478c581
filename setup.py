"""Packaging of keras_rnncells: ``pip install -e .`` (add ``".[test]"`` for the tests)."""

import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent


def read_version() -> str:
    """``__version__`` of keras_rnncells/__init__.py, read without importing it."""
    text = (HERE / "keras_rnncells" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"', text, re.MULTILINE)
    if match is None:
        raise RuntimeError("keras_rnncells/__init__.py defines no __version__")
    return match.group(1)


setup(
    name="keras-rnncells",
    version=read_version(),
    description="Recurrent cells of the literature for Keras 3, with a fused fast path",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["keras_rnncells", "keras_rnncells.*"]),
    python_requires=">=3.10",
    install_requires=[
        "tensorflow==2.21.*",
        "keras>=3.12,<4",
        "tensorflow-text==2.21.*",
        # TensorFlow 2.21 no longer brings it; `rnncells train` writes its logs.
        "tensorboard==2.21.*",
        "numpy",
    ],
    extras_require={
        # tf2onnx < 1.17 pins protobuf~=3.20, which TensorFlow 2.21 (protobuf >= 6.31) excludes;
        # onnxruntime >= 1.19 is built against numpy 2.
        "onnx": ["tf2onnx>=1.17,<2", "onnxruntime>=1.19,<2"],
        # ruff's formatting changes between minor versions: `ruff format --check` needs one.
        "test": ["pytest>=8", "hypothesis>=6", "ruff==0.17.*"],
        "plot": ["matplotlib>=3.8"],
    },
    entry_points={"console_scripts": ["rnncells = keras_rnncells.cli:main"]},
)
