"""The application registry: one listing (`keras_rnncells.defaults.APPS`,
read without TensorFlow) and the registrations of the app modules agree."""

import importlib

import keras
import pytest

from keras_rnncells.apps import get_app, list_apps, load_apps, register_app, servable_for
from keras_rnncells.apps.color_namer import ColorNamer
from keras_rnncells.cli import TRAINABLE
from keras_rnncells.defaults import APPS
from keras_rnncells.export.servable import model_servable
from keras_rnncells.text import WordTokenizer


@pytest.mark.parametrize("name", sorted(APPS))
def test_each_listed_module_registers_exactly_its_listed_name(name):
    module = APPS[name].module
    importlib.import_module(module)
    registered = {
        other
        for other, app in load_apps().items()
        if module in (app.servable.__module__, app.train_from_arguments.__module__)
    }
    assert registered == {name}
    app = get_app(name)
    assert app.name == name and app.help == APPS[name].help
    assert isinstance(app.model_class, type) and issubclass(app.model_class, keras.Model)


def test_every_registered_app_is_listed_and_trainable():
    assert sorted(load_apps()) == list_apps() == sorted(APPS)
    for name, listing in APPS.items():
        assert TRAINABLE[name] == (listing.module, listing.help)


def test_register_app_refuses_unlisted_duplicate_or_misplaced_apps():
    app = get_app("color-namer")
    with pytest.raises(ValueError, match="not listed in"):
        register_app("colour-namer", ColorNamer, app.servable, app.train_from_arguments)
    with pytest.raises(ValueError, match="already registered"):
        register_app("color-namer", ColorNamer, app.servable, app.train_from_arguments)
    with pytest.raises(ValueError, match="registered from"):
        register_app("seq2seq", ColorNamer, app.servable, app.train_from_arguments)
    with pytest.raises(ValueError, match="`name` must be one of"):
        get_app("colour-namer")


def test_an_app_model_is_served_through_its_app_by_every_writer():
    """`servable_for` and the exporters' `model_servable` (what every writer
    calls on a Keras model) give the application's servable (colors in)."""
    keras.utils.set_random_seed(0)
    words = WordTokenizer.from_corpus(["light blue", "dark red"], lowercase=True)
    model = ColorNamer(words, "gru", units=4, embedding_dim=4, max_length=4)
    for servable in (servable_for(model), model_servable(model)):
        assert servable.name == "color-namer"
        assert set(servable.examples) == {"rgb"}
    assert model_servable(model, name="renamed").name == "renamed"
    with pytest.raises(ValueError, match="no application serves a Sequential"):
        servable_for(keras.Sequential())
