"""The applications: sentiment classifier, color namers (both directions) and
the date-normalizing encoder-decoder. Each module registers its application
(`keras_rnncells.apps.registry`), which ``rnncells train`` trains and
``rnncells export`` serves through `servable_for`; `keras_rnncells.apps.runs`
makes a run directory an artifact."""

from keras_rnncells.apps.registry import (
    App,
    get_app,
    list_apps,
    load_apps,
    register_app,
    servable_for,
)

__all__ = ["App", "get_app", "list_apps", "load_apps", "register_app", "servable_for"]
