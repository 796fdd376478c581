"""Registry of the applications by name, in the style of the cell registry.

Each application module registers itself once, at import, with
`register_app`: its name, its model class, its servable function and its
``train_from_arguments``. The names, modules and help lines are listed in
`keras_rnncells.defaults.APPS`, importable without TensorFlow, so that
``rnncells --help`` lists the applications without importing them;
`load_apps` imports every listed module (what Keras needs before loading a
``model.keras``), and `get_app` and `servable_for` load before they look up.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from keras_rnncells.defaults import APPS
from keras_rnncells.export.limits import RequestLimits
from keras_rnncells.export.servable import Servable, model_servable, register_model_servable


@dataclass(frozen=True)
class App:
    """An application: ``model_class`` (the Keras model ``rnncells train``
    saves), ``servable`` (a trained model -> its `Servable`) and
    ``train_from_arguments`` (what ``rnncells train NAME`` runs, given the
    parsed arguments and the settings the app's flags gave)."""

    name: str
    model_class: type
    servable: Callable[[Any], Servable]
    train_from_arguments: Callable[[Any, dict[str, Any]], None]

    @property
    def module(self) -> str:
        """The module that registers the app (`keras_rnncells.defaults.APPS`)."""
        return APPS[self.name].module

    @property
    def help(self) -> str:
        """The app's one-line help (`keras_rnncells.defaults.APPS`)."""
        return APPS[self.name].help


_APPS: dict[str, App] = {}


def register_app(
    name: str,
    model_class: type,
    servable: Callable[[Any], Servable],
    train_from_arguments: Callable[[Any, dict[str, Any]], None],
) -> App:
    """Registers the application ``name``, called once by the module that
    `keras_rnncells.defaults.APPS` lists for it (it defines ``servable`` and
    ``train_from_arguments``). Exporting a ``model_class`` model then serves it
    through ``servable`` (`keras_rnncells.export.servable.register_model_servable`)."""
    listing = APPS.get(name)
    if listing is None:
        raise ValueError(
            f"Application {name!r} is not listed in keras_rnncells.defaults.APPS "
            f"({sorted(APPS)}); list it there with its module and help"
        )
    for function in (servable, train_from_arguments):
        if function.__module__ != listing.module:
            raise ValueError(
                f"Application {name!r} is listed with module {listing.module} in "
                f"keras_rnncells.defaults.APPS, but registered from {function.__module__}"
            )
    if name in _APPS:
        raise ValueError(f"An application named {name!r} is already registered")
    app = App(name, model_class, servable, train_from_arguments)
    _APPS[name] = app
    register_model_servable(model_class, servable)
    return app


def list_apps() -> list[str]:
    """Names of every application, sorted."""
    return sorted(APPS)


def load_apps() -> dict[str, App]:
    """Imports every application module (registering its app, and its model
    class with Keras); returns the apps by name."""
    return {name: load_app(name) for name in APPS}


def load_app(name: str) -> App:
    """The application ``name`` of `keras_rnncells.defaults.APPS`, its module imported."""
    module = APPS[name].module
    importlib.import_module(module)
    if name not in _APPS:
        raise RuntimeError(f"{module} does not register the application {name!r}")
    return _APPS[name]


def get_app(name: str) -> App:
    """The application registered under ``name`` (its module imported)."""
    if name not in APPS:
        raise ValueError(f"Argument `name` must be one of {list_apps()}, received: {name!r}")
    return load_app(name)


def app_of(model: Any) -> App | None:
    """The application whose model class ``model`` is an instance of (the
    nearest in its class hierarchy), else ``None``."""
    by_class = {app.model_class: app for app in load_apps().values()}
    return next((by_class[cls] for cls in type(model).__mro__ if cls in by_class), None)


def servable_for(model: Any, limits: RequestLimits | None = None) -> Servable:
    """The ``Servable`` of a trained application model (as ``model.keras``
    loads); ``limits``: its request limits, where it reads text
    (`keras_rnncells.export.servable.model_servable`)."""
    app = app_of(model)
    if app is None:
        raise ValueError(
            f"Argument `model`: no application serves a {type(model).__name__}; expected a "
            f"model written by `rnncells train` ({', '.join(list_apps())})"
        )
    return model_servable(model, limits=limits)
