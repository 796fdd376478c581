"""The tokenizer layers: round trips of text, special tokens and padding, edge
cases, vocabulary learning and files, .keras and SavedModel round trips, errors."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.text import (
    END_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    START_ID,
    UNK_ID,
    UNK_TEXT,
    CharTokenizer,
    WordPieceTokenizer,
    WordTokenizer,
)

CHAR_TEXTS = ["Hello, World!", "café 日本", "", "dab"]
CORPUS = [
    "The cat sat on the mat.",
    "Cats and dogs sat together!",
    "A dog chased the cats, then sat.",
    "Dogs like mats; cats like hats.",
]
WORDPIECE_SIZE = 70


@pytest.fixture(scope="module")
def chars() -> CharTokenizer:
    return CharTokenizer.from_corpus(CHAR_TEXTS)


@pytest.fixture(scope="module")
def wordpieces() -> WordPieceTokenizer:
    return WordPieceTokenizer.from_corpus(CORPUS, vocab_size=WORDPIECE_SIZE)


@pytest.fixture(params=["chars", "wordpieces"])
def tokenizer(request):
    return request.getfixturevalue(request.param)


def strings(tensor: tf.Tensor) -> list[str]:
    return [s.decode("utf-8") for s in tensor.numpy()]


def test_char_round_trip(chars):
    ids = chars(CHAR_TEXTS, add_start=True, add_end=True).numpy()
    assert ids.dtype == np.int32
    assert ids.shape == (len(CHAR_TEXTS), max(map(len, CHAR_TEXTS)) + 2)
    for row, text in zip(ids, CHAR_TEXTS):
        assert row[0] == START_ID and row[len(text) + 1] == END_ID
        assert [chars.vocabulary[i] for i in row[1 : len(text) + 1]] == list(text)
        assert (row[len(text) + 2 :] == PAD_ID).all()
    assert strings(chars.detokenize(ids)) == CHAR_TEXTS
    assert strings(chars.detokenize(chars.tokenize(CHAR_TEXTS))) == CHAR_TEXTS
    assert chars.tokenize(CHAR_TEXTS).row_lengths().numpy().tolist() == list(map(len, CHAR_TEXTS))


def test_char_vocabulary_is_ordered_by_frequency_then_codepoint():
    # a and b 3 times each, c once.
    texts = ["abba", "cab"]
    assert CharTokenizer.from_corpus(texts).vocabulary == [*SPECIAL_TOKENS, "a", "b", "c"]
    assert CharTokenizer.from_corpus(texts, min_count=2).vocabulary == [*SPECIAL_TOKENS, "a", "b"]
    assert CharTokenizer.from_corpus(texts, max_size=5).vocabulary == [*SPECIAL_TOKENS, "a"]
    scalars = tf.data.Dataset.from_tensor_slices(texts)
    for dataset in (scalars, scalars.batch(1)):
        assert CharTokenizer.from_corpus(dataset).vocabulary == [*SPECIAL_TOKENS, "a", "b", "c"]
    lowered = CharTokenizer.from_corpus(["ÀBba"], lowercase=True)
    assert lowered.vocabulary == [*SPECIAL_TOKENS, "b", "a", "à"]
    assert strings(lowered.detokenize(lowered(["BÀ"]))) == ["bà"]


def test_empty_string(tokenizer):
    assert tokenizer([""]).numpy().tolist() == [[PAD_ID]]
    assert tokenizer([""], add_start=True, add_end=True).numpy().tolist() == [[START_ID, END_ID]]
    assert tokenizer.tokenize([""]).row_lengths().numpy().tolist() == [0]
    mixed = tokenizer(["", "a"], add_end=True).numpy()
    assert mixed[0].tolist() == [END_ID, PAD_ID]
    assert strings(tokenizer.detokenize(mixed)) == ["", "a"]


def test_unknown_tokens_become_the_placeholder(chars, wordpieces):
    assert "~" not in chars.vocabulary
    ids = chars(["d~b"]).numpy()[0]
    assert ids[1] == UNK_ID and ids[0] != UNK_ID and ids[2] != UNK_ID
    assert strings(chars.detokenize(ids[None])) == [f"d{UNK_TEXT}b"]
    # "z" and "q" are not in the corpus: no subword can make these words.
    ids = wordpieces.tokenize(["the zebra quiz"]).numpy()[0].tolist()
    assert ids[-2:] == [UNK_ID, UNK_ID] and UNK_ID not in ids[:-2]
    assert strings(wordpieces.detokenize(wordpieces(["the zebra"]))) == [f"the {UNK_TEXT}"]


def test_max_length_keeps_the_first_tokens_and_the_end(chars):
    short = CharTokenizer(chars.vocabulary, max_length=4)
    full = chars.tokenize(["dabdab"]).numpy()[0]
    assert len(short.tokenize(["dabdab"]).numpy()[0]) == 6  # tokenize does not truncate
    assert short(["dabdab"]).numpy()[0].tolist() == full[:4].tolist()
    assert short(["dabdab"], add_end=True).numpy()[0].tolist() == [*full[:3], END_ID]
    both = short(["dabdab", "d"], add_start=True, add_end=True).numpy()
    assert both.tolist() == [[START_ID, *full[:2], END_ID], [START_ID, full[0], END_ID, PAD_ID]]
    room_for_specials = CharTokenizer(chars.vocabulary, max_length=2)
    assert room_for_specials(["dab"], add_start=True, add_end=True).numpy().tolist() == [
        [START_ID, END_ID]
    ]
    with pytest.raises(ValueError, match="`max_length`"):
        CharTokenizer(chars.vocabulary, max_length=1)(["dab"], add_start=True, add_end=True)


def test_detokenize_reads_rows_up_to_the_first_end(chars):
    d, a = chars.vocabulary.index("d"), chars.vocabulary.index("a")
    ids = [[START_ID, d, END_ID, a], [d, PAD_ID, a, PAD_ID], [d, chars.vocabulary_size, -1, a]]
    expected = ["d", "da", f"d{UNK_TEXT}{UNK_TEXT}a"]
    assert strings(chars.detokenize(tf.constant(ids, tf.int64))) == expected
    ragged = tf.ragged.constant([[d, END_ID, a], [a]])
    assert strings(chars.detokenize(ragged)) == ["d", "a"]


def test_input_shapes(chars):
    batch = chars(["dab", "a"]).numpy()
    assert (chars([["dab"], ["a"]]).numpy() == batch).all()
    assert (chars(np.array(["dab", "a"])).numpy() == batch).all()
    assert (chars("dab").numpy() == batch[:1]).all()


def test_wordpiece_round_trip(wordpieces):
    vocabulary = wordpieces.vocabulary
    assert vocabulary[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    assert len(vocabulary) <= WORDPIECE_SIZE
    ids = wordpieces(CORPUS, add_start=True, add_end=True)
    tokens = [vocabulary[i] for i in ids.numpy().ravel()]
    assert UNK_ID not in ids.numpy() and any(token.startswith("##") for token in tokens)
    # Modulo lower-casing and whitespace (punctuation is spaced out).
    for text, back in zip(CORPUS, strings(wordpieces.detokenize(ids))):
        assert back.split() == back.split(" ") and "".join(back.split()) == "".join(
            text.lower().split()
        )
    assert strings(wordpieces.detokenize(wordpieces(["The  CAT, sät."]))) == ["the cat , sat ."]


def test_wordpieces_of_a_corpus_without_words():
    tokenizer = WordPieceTokenizer.from_corpus(["", " "], vocab_size=WORDPIECE_SIZE)
    assert tokenizer.vocabulary == list(SPECIAL_TOKENS)
    assert tokenizer(["a b"]).numpy().tolist() == [[UNK_ID, UNK_ID]]


def test_cased_wordpieces_keep_the_case():
    cased = WordPieceTokenizer.from_corpus(CORPUS, vocab_size=WORDPIECE_SIZE, lowercase=False)
    assert (
        cased.tokenize(["The"]).numpy()[0].tolist() != cased.tokenize(["the"]).numpy()[0].tolist()
    )
    for text, back in zip(CORPUS, strings(cased.detokenize(cased(CORPUS)))):
        assert "".join(back.split()) == "".join(text.split())


def test_keras_model_saves_and_loads(chars, wordpieces, tmp_path):
    inputs = keras.Input(shape=(), dtype="string")
    outputs = [chars(inputs, add_start=True, add_end=True), wordpieces(inputs, add_end=True)]
    model = keras.Model(inputs, outputs)
    texts = tf.constant([*CHAR_TEXTS, *CORPUS])
    expected = [chars(texts, add_start=True, add_end=True), wordpieces(texts, add_end=True)]
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    results = [*model(texts), *loaded(texts), *tf.function(loaded)(texts)]
    for actual, wanted in zip(results, expected * 3):
        np.testing.assert_array_equal(actual, wanted)
    char_layer, wordpiece_layer = loaded.layers[1:]
    assert isinstance(char_layer, CharTokenizer) and isinstance(wordpiece_layer, WordPieceTokenizer)
    assert char_layer.vocabulary == chars.vocabulary
    assert wordpiece_layer.vocabulary == wordpieces.vocabulary


def test_saved_model_round_trip(chars, wordpieces, tmp_path):
    module = tf.Module()
    module.chars, module.wordpieces = chars, wordpieces

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def round_trip(texts):
        char_ids = module.chars(texts, add_start=True, add_end=True)
        wordpiece_ids = module.wordpieces(texts, add_end=True)
        return {
            "char_ids": char_ids,
            "chars": module.chars.detokenize(char_ids),
            "wordpiece_ids": wordpiece_ids,
            "wordpieces": module.wordpieces.detokenize(wordpiece_ids),
        }

    module.round_trip = round_trip
    tf.saved_model.save(module, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    texts = tf.constant([*CHAR_TEXTS, CORPUS[0]])
    outputs = loaded.round_trip(texts)
    char_ids, wordpiece_ids = (
        chars(texts, add_start=True, add_end=True),
        wordpieces(texts, add_end=True),
    )
    np.testing.assert_array_equal(outputs["char_ids"], char_ids)
    np.testing.assert_array_equal(outputs["wordpiece_ids"], wordpiece_ids)
    assert strings(outputs["chars"]) == strings(chars.detokenize(char_ids))
    assert strings(outputs["chars"])[: len(CHAR_TEXTS)] == CHAR_TEXTS
    assert strings(outputs["wordpieces"]) == strings(wordpieces.detokenize(wordpiece_ids))
    assert strings(outputs["wordpieces"])[-1] == "the cat sat on the mat ."


def test_vocabulary_file_round_trip(tokenizer, tmp_path):
    path = tmp_path / "vocabulary.txt"
    path.write_text("replaced\n", encoding="utf-8")
    tokenizer.save_vocabulary(path)
    assert path.read_bytes().decode("utf-8").split("\n") == [*tokenizer.vocabulary, ""]
    assert [p.name for p in tmp_path.iterdir()] == ["vocabulary.txt"]
    loaded = type(tokenizer).from_vocabulary_file(path, max_length=3)
    assert loaded.vocabulary == tokenizer.vocabulary and loaded.max_length == 3
    texts = [*CHAR_TEXTS, *CORPUS]
    np.testing.assert_array_equal(loaded(texts), tokenizer(texts)[:, :3])


def test_vocabulary_file_refuses_line_breaks(tmp_path):
    tokenizer = CharTokenizer([*SPECIAL_TOKENS, "a", "\n"])
    assert tokenizer(["a\na"]).numpy()[0].tolist() == [4, 5, 4]
    with pytest.raises(ValueError, match="line break"):
        tokenizer.save_vocabulary(tmp_path / "vocabulary.txt")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "make, argument",
    [
        (lambda: CharTokenizer("[PAD][UNK]"), "vocabulary"),
        (lambda: CharTokenizer([*SPECIAL_TOKENS, 5]), "vocabulary"),
        (lambda: CharTokenizer([*SPECIAL_TOKENS, ""]), "vocabulary"),
        (lambda: CharTokenizer([*SPECIAL_TOKENS, "a", "a"]), "vocabulary"),
        (lambda: CharTokenizer(["a", *SPECIAL_TOKENS]), "vocabulary"),
        (lambda: CharTokenizer(list(SPECIAL_TOKENS[::-1])), "vocabulary"),
        (lambda: CharTokenizer(list(SPECIAL_TOKENS), max_length=0), "max_length"),
        (lambda: CharTokenizer(list(SPECIAL_TOKENS), max_length=2.0), "max_length"),
        (lambda: CharTokenizer(list(SPECIAL_TOKENS), max_length=True), "max_length"),
        (lambda: CharTokenizer(list(SPECIAL_TOKENS), lowercase="yes"), "lowercase"),
        (lambda: CharTokenizer(list(SPECIAL_TOKENS))(["a"], add_end=1), "add_end"),
        (lambda: CharTokenizer(list(SPECIAL_TOKENS))([1, 2]), "strings"),
        (lambda: CharTokenizer(list(SPECIAL_TOKENS))([["a", "b"]]), "strings"),
        (lambda: CharTokenizer(list(SPECIAL_TOKENS)).detokenize([[0.5]]), "ids"),
        (lambda: CharTokenizer(list(SPECIAL_TOKENS)).detokenize([1, 2]), "ids"),
        (lambda: CharTokenizer.from_corpus("abc"), "texts"),
        (lambda: CharTokenizer.from_corpus(["a", 1]), "texts"),
        (lambda: CharTokenizer.from_corpus(tf.data.Dataset.range(3)), "texts"),
        (lambda: CharTokenizer.from_corpus(["a"], min_count=0), "min_count"),
        (lambda: CharTokenizer.from_corpus(["a"], max_size=3), "max_size"),
        (lambda: WordPieceTokenizer.from_corpus(["a"], vocab_size=4), "vocab_size"),
    ],
)
def test_bad_arguments_raise_value_errors(make, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        make()


def test_word_tokenizer_round_trip_and_saving(tmp_path):
    tokenizer = WordTokenizer.from_corpus(
        ["light  Blue", "blue green", "robin's egg"], lowercase=True
    )
    assert tokenizer.vocabulary[4] == "blue"  # the most frequent word first
    ids = tokenizer(["Light blue ", "", "dark blue"], add_start=True, add_end=True).numpy()
    light, blue = tokenizer.vocabulary.index("light"), tokenizer.vocabulary.index("blue")
    assert ids.tolist() == [
        [START_ID, light, blue, END_ID],
        [START_ID, END_ID, PAD_ID, PAD_ID],
        [START_ID, UNK_ID, blue, END_ID],
    ]
    texts = tokenizer.detokenize(ids).numpy().tolist()
    assert texts == [b"light blue", b"", UNK_TEXT.encode() + b" blue"]
    tokenizer.save_vocabulary(tmp_path / "words.txt")
    loaded = WordTokenizer.from_vocabulary_file(tmp_path / "words.txt", lowercase=True)
    np.testing.assert_array_equal(loaded(["robin's egg"]), tokenizer(["robin's egg"]))
    config_copy = WordTokenizer.from_config(tokenizer.get_config())
    assert config_copy.vocabulary == tokenizer.vocabulary and config_copy.lowercase
