"""``python -m keras_rnncells.cli``: the ``rnncells`` command."""

from keras_rnncells.cli import main

if __name__ == "__main__":
    main()
